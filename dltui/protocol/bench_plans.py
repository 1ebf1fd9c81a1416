"""What a `run` frame asks an agent to benchmark: kernels (`KernelPlan`) or training
(`ModelPlan`), and, in a run across servers, this agent's part (`ClusterRole`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ClusterRole:
    """One agent's part in a run across servers: the client hands out ranks and the rendezvous,
    the frameworks' own engines (torch.distributed) move the data."""

    master_addr: str
    """Where global rank 0's agent can be reached by the others."""
    master_port: int
    rank_offset: int
    """The global rank of this agent's first local rank (TensorFlow: its worker index)."""
    local_ranks: int
    world: int
    """torch: ranks over all agents. TensorFlow: workers, one per agent."""
    peers: list[str] = field(default_factory=list)
    """TensorFlow: every agent's worker address HOST:PORT, in order (its TF_CONFIG cluster)."""
    servers: int = 1
    """Agents taking part (a result reports how many servers its figure spans)."""


@dataclass(frozen=True, slots=True)
class KernelPlan:
    """What to run: named kernels from named shape sets, never a command line.

    Types are checked on decode; names and bounds by `dltui.plans.check.check_plan`.
    """

    framework: str = "torch"
    shape_set: str = "quick"
    kinds: list[str] = field(default_factory=lambda: ["gemm", "conv", "rnn"])
    precisions: list[str] = field(default_factory=lambda: ["fp32"])
    device: str = "auto"
    """"auto" (the first GPU if there is one), "cuda", "cpu"."""
    gpus: int = 0
    """GPUs (or CPU processes) for all-reduce; 0: every local GPU, or 2 CPU processes."""
    warmup: int | None = None
    iterations: int | None = None
    """Timed iterations to cover at the least, within `max_seconds`; None: DeepBench's counts
    (GEMM 400, conv 300, RNN 100). Short kernels run more: at least five samples of ~2 ms."""
    max_seconds: float = 2.0
    """Upper bound on the timed loop of one case, so a slow CPU still finishes."""
    pad: bool = True
    """16-bit GEMMs and convolutions padded to multiples of 8, as DeepBench pads them."""
    tuning: str = "searched"
    """"searched": the fastest algorithm and layout per pass, as cudnnFind finds them;
    "default": the framework's own choice, what a user's code gets."""
    fill: str = "deepbench"
    """"deepbench": the inputs DeepBench times, so figures compare with its published ones
    and the V100 references: uniform [0, 1) floats copied into the case's type, which in
    16-bit types is an integer conversion to 0 (its `rand<uint16_t>`), so 16-bit cases run
    on zeros. "random": normal values, as training sees them; a GPU at its power cap clocks
    lower on them (an H200's large 16-bit GEMMs run ~13% slower)."""
    energy: bool = False
    """Run each compute case on, sustained, for ~0.6 s (up to 4 s where the power swings at its
    limit, to read whole swings) while the worker reads the GPU's energy counter: per-watt
    figures, and the rate under sustained load."""
    timeout_s: float = 3600.0
    """The whole job; past it the worker is killed and the job fails."""
    cluster: ClusterRole | None = None
    """Set when this agent is one of several in a scale-out run (all-reduce only, so far)."""
    force: bool = False
    """Run even while someone else's work is on the server's GPUs (the results say so);
    without it the agent refuses the run."""


@dataclass(frozen=True, slots=True)
class ModelPlan:
    """Training throughput of named CNNs: synthetic ImageNet-shaped data made on the device, or
    a folder of images trained to a target accuracy. Each entry of `gpus` is one run on this
    server (a scale-up sweep); with `cluster`, one run across servers.

    Types are checked on decode; names and bounds by `dltui.plans.check.check_plan`. None means
    "the fast choice for the device": bf16, channels-last and compilation on a GPU; fp32 and
    eager on a CPU, where compiling costs more than it saves in a short run.
    """

    framework: str = "torch"
    models: list[str] = field(default_factory=lambda: ["resnet50"])
    gpus: list[int] = field(default_factory=lambda: [1])
    """GPUs (CPU: processes) per run, in order; 0 means every GPU of the server."""
    batch: int | None = None
    """Images per GPU per step; None: the model's default for the device."""
    precision: str | None = None
    """fp32, tf32, fp16 or bf16 (16-bit: mixed, weights kept in fp32)."""
    channels_last: bool | None = None
    compile: bool | None = None
    """torch.compile, or XLA (`jit_compile`) in TensorFlow."""
    warmup: int = 10
    steps: int = 100
    image_size: int = 224
    classes: int = 1000
    device: str = "auto"
    learning_rate: float | None = None
    """None: the model's own. The CNNs train with SGD, momentum 0.9, 0.1 scaled by the global
    batch over 256 as Goyal et al. do; the GPT models with AdamW at GPT-3's rates."""
    data_dir: str | None = None
    """A folder of images on the agent, one sub-folder per class: time to `target_accuracy`."""
    target_accuracy: float | None = None
    """Top-1 on the held-out split (a fraction) that ends a time-to-accuracy run."""
    holdout: float = 0.2
    max_epochs: int = 50
    timeout_s: float = 3600.0
    cluster: ClusterRole | None = None
    force: bool = False
    """As KernelPlan.force."""
    seq_len: int | None = None
    """GPT models: tokens per sequence; None: the model's default for the device."""
    parallel: str = "ddp"
    """GPT models across replicas: "ddp", or "fsdp" (full sharding). The CNNs train with DDP."""


Plan = KernelPlan | ModelPlan
