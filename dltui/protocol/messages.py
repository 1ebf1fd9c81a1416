"""Typed protocol messages and their validation.

On the wire a message is a msgpack map: ``{"type": <name>, <field>: <value>, ...}``. Decoding
checks every field against the dataclass's type hints, so a frame that does not validate is a
`ProtocolError`, never an AttributeError deep in the UI. Unknown fields are ignored, so an agent
one minor version newer can add a field without breaking older clients.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from dltui.protocol.errors import ProtocolError
from dltui.protocol.topology import Topology
from dltui.protocol.validate import build

PROTOCOL_VERSION = 2  # 2: frames after a handshake with a secret are sealed

GpuState = Literal["ok", "lost", "error"]
LinkStateName = Literal["connecting", "live", "offline", "auth_failed", "busy"]
"""busy: the agent has no room now (its clients, or connections waiting to log in); retried."""
JobState = Literal["done", "cancelled", "failed", "refused"]
Severity = Literal["info", "warning", "critical"]
EventState = Literal["raised", "resolved", "once"]
SEVERITIES: tuple[Severity, ...] = ("info", "warning", "critical")
"""In rising order: `dltui record --fail-on warning` also fails on a critical event."""


# --- inventory -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MigInstance:
    """One MIG instance of a GPU in MIG mode: what a benchmark can target as `cuda:<uuid>`."""

    uuid: str
    """"MIG-…", as CUDA_VISIBLE_DEVICES takes it."""
    gpu_instance: int
    compute_instance: int
    profile: str
    """The profile's name, e.g. "1g.18gb" (from NVML's name for the instance)."""
    memory_total: int
    """Bytes."""
    sm_count: int | None = None


@dataclass(frozen=True, slots=True)
class GpuInfo:
    index: int
    name: str
    uuid: str
    memory_total: int
    """Bytes."""
    pcie_gen: int | None = None
    pcie_width: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None
    nvlink_links: int = 0
    """Active NVLink links; 0 where there are none or NVML cannot say."""
    gpm: bool = False
    """Whether GPM metrics (SM active, tensor active, DRAM, PCIe rates) are supported."""
    mig: bool = False
    """MIG mode is on: the GPU is split into `mig_instances`."""
    mig_instances: list[MigInstance] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Inventory:
    hostname: str
    os: str
    cpu_model: str
    cpu_count: int
    memory_total: int
    gpus: list[GpuInfo] = field(default_factory=list)
    driver_version: str | None = None
    cuda_version: str | None = None
    nvml_error: str | None = None
    """Why there are no GPUs (no driver, NVML failed to start); None when NVML works."""
    frameworks: dict[str, str] = field(default_factory=dict)
    python: str = ""
    dltui: str = ""
    topology: Topology | None = None
    """How the server is wired (GPU paths, NUMA, NICs); None from agents older than it."""


# --- telemetry -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GpuProcess:
    """A compute process on a GPU (NVML's list), with its owner and where it runs, so a user
    sees whose work is on the GPU. Anything the agent could not read is None."""

    pid: int
    """As the agent's host sees it (a container's processes by their host PID)."""
    memory: int | None = None
    """GPU memory it holds, bytes; None where NVML cannot say (some drivers, MIG)."""
    name: str | None = None
    """The process name as the agent's host sees it; None when it could not be read."""
    user: str | None = None
    command: str | None = None
    """Its command line, shell-quoted, cut to 200 characters."""
    started: float | None = None
    """When it started, wall clock."""
    cpu: float | None = None
    """% of one core since the previous list (None in the first list it is in)."""
    rss: int | None = None
    """Host memory it holds, bytes."""
    sm_util: float | None = None
    """% of the SMs it kept busy since the previous list (nvmlDeviceGetProcessUtilization)."""
    mem_util: float | None = None
    """% of memory-controller time it used, the same way."""
    ns_pid: int | None = None
    """Its PID inside its own PID namespace, where that is not `pid` (a container's)."""
    container: str | None = None
    """Container ID, from its cgroup."""
    runtime: str | None = None
    """docker, containerd, cri-o or podman."""
    pod: str | None = None
    """Kubernetes pod UID, where its cgroup is under kubepods."""
    pod_name: str | None = None
    """Kubernetes namespace/pod, where the kubelet's log links name the container."""
    container_name: str | None = None
    """Kubernetes container name, the same way."""
    job: str | None = None
    """Slurm job ID, from its cgroup (slurm/uid_*/job_*): the kernel's word, not the user's."""
    job_claimed: str | None = None
    """The SLURM_JOB_ID in its own environment, where its cgroup names no job: anyone can
    set that, so it is shown as claimed, never as the job."""
    own: bool = False
    """This agent's own benchmark worker, or a rank that worker started."""
    gpu_instance: int | None = None
    """MIG: the GPU instance it runs in."""
    compute_instance: int | None = None


@dataclass(frozen=True, slots=True)
class MigSample:
    """One MIG instance's readings: its memory, and GPM metrics where NVML gives them."""

    gpu_instance: int
    values: dict[str, float]
    """Field name (protocol.fields) to value, as in a GPU's `values`."""


@dataclass(frozen=True, slots=True)
class GpuSample:
    index: int
    state: GpuState
    values: dict[str, float]
    """Field name (see protocol.fields) to value; a field NVML does not support is absent."""
    errors: dict[str, str] = field(default_factory=dict)
    """Fields whose read failed this tick, with NVML's reason."""
    processes: list[GpuProcess] | None = None
    """The compute processes, only in the sample after each read (every 2 s): None means
    "unchanged since the last list", an empty list "none"."""
    mig: list[MigSample] | None = None
    """A GPU in MIG mode: each instance's readings, in the sample after each read (every 2 s)
    like `processes`; None otherwise."""


@dataclass(frozen=True, slots=True)
class HostSample:
    values: dict[str, float]
    cpu_per_core: list[float] = field(default_factory=list)


# --- benchmarks ----------------------------------------------------------------------------


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
    """Run each compute case on, sustained, for ~0.6 s while the worker reads the GPU's energy
    counter: per-watt figures, and the rate under sustained load."""
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


@dataclass(frozen=True, slots=True)
class StepProfile:
    """One training step taken apart, as the what-if predictor needs it (dltui/predict): how
    big each gradient is and when backward made it ready, measured on one replica.

    Times are fractions of the profiled step, so they scale with the result's own timed step:
    the profiled steps carry the hooks that take the times, the timed steps do not.
    """

    forward: float
    """Where forward ended (the loss computed), as a fraction of the step."""
    backward: float
    """Where backward ended (the last gradient ready); the rest is the optimizer's."""
    gradient_bytes: list[int] = field(default_factory=list)
    """Each gradient tensor's size, in the order backward made them ready."""
    ready: list[float] = field(default_factory=list)
    """When each was ready, as a fraction of the step; empty where the framework cannot say
    (then nothing can overlap: `overlap` is False)."""
    params: int = 0
    """Trainable parameters."""
    bucket_bytes: int = 0
    """The framework's all-reduce bucket cap (DDP: 25 MiB); 0: one all-reduce of everything."""
    first_bucket_bytes: int = 0
    """DDP's first bucket is smaller (1 MiB), so communication starts early."""
    overlap: bool = False
    """Whether the framework all-reduces a bucket while backward goes on (DDP, Horovod) or
    only after backward (TensorFlow's MultiWorkerMirroredStrategy)."""
    collective: str = ""
    """The engine that all-reduces the gradients: "gloo", "nccl", "tensorflow"."""
    method: str = ""
    """How the times were taken: "hooks" (a hook per gradient; CUDA events on a GPU) or
    "sizes" (the gradients' sizes only)."""
    overhead: float = 0.0
    """What the data-parallel wrapper's own machinery adds to a step (DDP's hooks, bucket
    views, buffer broadcasts), as a fraction of the step: timed over a group of one rank."""
    cpu_share: float | None = None
    """On a CPU device, the CPUs the step kept busy (process CPU time ÷ wall time): an
    all-reduce's own CPU work takes from it while backward runs. None on GPUs."""


@dataclass(frozen=True, slots=True)
class ModelResult:
    """One training run: throughput over the timed steps, or time to a target accuracy."""

    model: str
    framework: str
    device: str
    """"cuda" or "cpu"."""
    precision: str
    gpus: int
    """Replicas over every server of the run (CPU: processes)."""
    batch: int
    """Images (a GPT run: sequences) per replica per step; the global batch is gpus × batch."""
    servers: int = 1
    image_size: int = 224
    compiled: bool = False
    channels_last: bool = False
    steps: int = 0
    images_per_s: float | None = None
    """The whole run: gpus × batch × steps ÷ the timed steps' wall time."""
    spread: float | None = None
    """Images/s (a GPT run: tokens/s), 1.4826 × the median absolute deviation of per-step
    rates (tf_cnn_benchmarks' jitter)."""
    step_times: list[float] = field(default_factory=list)
    """Seconds per timed step, in order (the slowest rank's where there are several)."""
    data: str = "synthetic"
    """"synthetic", or "folder" for a time-to-accuracy run."""
    time_to_accuracy_s: float | None = None
    """Wall time from the first training step until the held-out top-1 reached the target."""
    accuracy: float | None = None
    """The last held-out top-1 measured (a fraction)."""
    target_accuracy: float | None = None
    epochs: int | None = None
    reference: str | None = None
    """What `reference_images_per_s` is: a published figure for this model and GPU count; for
    a GPT run with an MFU, the published MFU figures it stands beside."""
    reference_images_per_s: float | None = None
    error: str | None = None
    gpu_set: list[int] = field(default_factory=list)
    """The NVML indices of the GPUs the ranks ran on, in rank order; empty where unknown."""
    placement: str | None = None
    """Why those GPUs, in words ("GPU 0,1 · NVLink ×18 (NVSwitch) · NUMA 0")."""
    others: str | None = None
    """Someone else's work on the server's GPUs while it ran, in words ("user alice (job
    41233) on GPU 0"); None when there was none (a run forced onto busy GPUs says so)."""
    profile: StepProfile | None = None
    """One step taken apart (gradients, when each was ready), for `dltui predict`; None in
    results from before profiles, and in time-to-accuracy runs."""
    seq_len: int | None = None
    """A GPT model's tokens per sequence (`batch` is then sequences per replica); None for
    the CNNs."""
    tokens_per_s: float | None = None
    """A GPT model's tokens trained per second, the whole run (gpus × batch × seq_len ×
    steps ÷ the timed steps' wall time); None for the CNNs, whose figure is images_per_s."""
    mfu: float | None = None
    """Model FLOPs utilisation (a fraction): (6·N + 12·L·d·T) × tokens/s over the GPUs' dense
    16-bit peak; None where the GPU's peak is not known (plans/peaks.py) or on a CPU."""
    peak_tflops: float | None = None
    """The dense 16-bit peak per GPU that `mfu` divides by, TFLOP/s."""
    parallel: str | None = None
    """"ddp" or "fsdp" for a GPT run; None for the CNNs (DDP where there are replicas)."""
    peak_memory: int | None = None
    """Bytes of GPU memory the busiest rank's tensors peaked at; None on a CPU."""
    losses: list[float] = field(default_factory=list)
    """Rank 0's training loss at every step, warm-up included: it must fall on the synthetic
    task (a broken model cannot pass)."""


@dataclass(frozen=True, slots=True)
class KernelResult:
    """One timed case. Times are seconds; rates None where they do not apply."""

    kind: str
    framework: str
    device: str
    precision: str
    direction: str
    """fwd, bwd_data, bwd_weights, fwd+bwd, h2d, d2h, d2d, p2p, allreduce."""
    shape: str
    """The case in DeepBench's notation, e.g. "5124x9124x2560 NN"."""
    params: dict[str, int] = field(default_factory=dict)
    iterations: int = 0
    median_s: float = 0.0
    spread_s: float = 0.0
    """1.4826 × median absolute deviation, as tf_cnn_benchmarks reports jitter."""
    min_s: float = 0.0
    tflops: float | None = None
    gbps: float | None = None
    """Algorithm bandwidth, GB/s (10⁹ B/s)."""
    busbw_gbps: float | None = None
    reference_gpu: str | None = None
    reference_tflops: float | None = None
    reference_ms: float | None = None
    ratio: float | None = None
    """Our rate over the reference's (time ratio where the reference has no rate)."""
    error: str | None = None
    """This case failed (out of memory, unsupported precision): the others go on."""
    method: str | None = None
    """How it was timed: "graph" (CUDA graph replays), "batch" (back-to-back launches between
    one pair of events), "each" (events around every iteration), "loop" (TensorFlow's device
    loop); None in results from before methods were recorded."""
    samples: int = 0
    """Timed samples, each of `per_sample` iterations: the median and spread are over these."""
    per_sample: int = 1
    padded_shape: str | None = None
    """The shape as timed, where padding changed it; rates count `shape`, as DeepBench's do."""
    tuning: str | None = None
    """"searched" or "default" (KernelPlan.tuning); None where nothing was tuned."""
    layout: str | None = None
    """The memory layout timed: "nchw" or "nhwc" for convolutions."""
    fill: str = "random"
    """The inputs' values (KernelPlan.fill): "deepbench" or "random" (results from before the
    field say nothing and were random; "zeros" in some: DeepBench's 16-bit inputs)."""
    energy_j: float | None = None
    """Joules the GPU drew over `energy_s` seconds of a sustained run of the case (its energy
    counter, between two of its updates), where the plan asked for energy."""
    energy_s: float | None = None
    sustained_s: float | None = None
    """Seconds per iteration during that sustained run: a power cap shows as a longer time."""
    gpu_set: list[int] = field(default_factory=list)
    """NVML indices of the GPUs it ran on: a peer copy's source and destination, an
    all-reduce's ranks in order; empty where unknown (CUDA's numbering is not NVML's)."""
    placement: str | None = None
    """Why an all-reduce's ranks are on those GPUs, in words."""
    link: str | None = None
    """The link a copy crossed, in words ("NVLink ×18", "PCIe gen5 x16")."""
    nominal_gbps: float | None = None
    """That link's nominal rate each way, GB/s: what `gbps` is measured against."""
    others: str | None = None
    """As ModelResult.others."""
    cpu_s: float | None = None
    """CPU time the reporting rank's process spent per iteration, all its threads together
    (an all-reduce on CPU processes: what communication takes from compute there)."""
    backend: str | None = None
    """The implementation that won a search among several and was timed: an attention case's
    scaled_dot_product_attention backend ("flash", "cudnn", "efficient", "math")."""


# --- messages ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Message:
    TYPE: ClassVar[str] = ""


@dataclass(frozen=True, slots=True)
class Hello(Message):
    """Agent → client, first frame: who I am and, when a secret is set, a challenge."""

    TYPE: ClassVar[str] = "hello"
    version: int
    agent_id: str
    hostname: str
    challenge: bytes | None = None


@dataclass(frozen=True, slots=True)
class Auth(Message):
    """Client → agent: the answer to the challenge, and a challenge for the agent."""

    TYPE: ClassVar[str] = "auth"
    version: int
    client: str
    nonce: bytes
    mac: bytes | None = None


@dataclass(frozen=True, slots=True)
class Welcome(Message):
    """Agent → client: the handshake succeeded; the inventory, and the agent's proof."""

    TYPE: ClassVar[str] = "welcome"
    agent_id: str
    inventory: Inventory
    rate_hz: float
    wall: float
    mono: float
    proof: bytes | None = None


MAX_RATE_HZ = 100.0
"""The most samples a second an agent takes, or a client may ask for."""
MAX_BATCH_S = 2.0
"""The longest a client may let its samples wait at the agent, to be sent with later ones: a
batch at MAX_RATE_HZ (200 samples) still fits in a client's queue (QUEUE_LIMIT, 256)."""


@dataclass(frozen=True, slots=True)
class Subscribe(Message):
    """Client → agent: send samples at most this often; each may wait up to `batch_s` to be
    sent together with later ones (one write, one wake of each side, instead of one a tick)."""

    TYPE: ClassVar[str] = "subscribe"
    seq: int
    rate_hz: float
    batch_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Sample(Message):
    """Agent → client: one tick of telemetry, stamped with the agent's wall and monotonic clocks."""

    TYPE: ClassVar[str] = "sample"
    seq: int
    wall: float
    mono: float
    host: HostSample
    gpus: list[GpuSample] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Ping(Message):
    TYPE: ClassVar[str] = "ping"
    seq: int
    token: int


@dataclass(frozen=True, slots=True)
class Pong(Message):
    """Agent → client: the echoed token with the agent's clocks, for RTT and clock offset."""

    TYPE: ClassVar[str] = "pong"
    token: int
    wall: float
    mono: float
    dropped: int = 0
    """Samples dropped for this client so far because it read too slowly."""


@dataclass(frozen=True, slots=True)
class Error(Message):
    TYPE: ClassVar[str] = "error"
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class Bye(Message):
    TYPE: ClassVar[str] = "bye"
    reason: str
    seq: int | None = None


@dataclass(frozen=True, slots=True)
class Link(Message):
    """Made by the client, never sent by an agent: the connection's state changed.

    It travels through the same path as received frames, so a recording holds the gaps.
    """

    TYPE: ClassVar[str] = "link"
    state: LinkStateName
    wall: float
    detail: str | None = None
    rtt: float | None = None
    offset: float | None = None


Plan = KernelPlan | ModelPlan


@dataclass(frozen=True, slots=True)
class Run(Message):
    """Client → agent: start a benchmark job, kernels (`plan`) or training (`models`), exactly
    one of them. Refused before anything runs if the plan is bad."""

    TYPE: ClassVar[str] = "run"
    seq: int
    job: str
    plan: KernelPlan | None = None
    models: ModelPlan | None = None

    @classmethod
    def of(cls, seq: int, job: str, plan: Plan) -> Run:
        if isinstance(plan, ModelPlan):
            return cls(seq, job, models=plan)
        return cls(seq, job, plan=plan)

    @property
    def what(self) -> Plan | None:
        """The plan to run; None when the frame carries neither or both."""
        if (self.plan is None) == (self.models is None):
            return None
        return self.plan or self.models


@dataclass(frozen=True, slots=True)
class Cancel(Message):
    TYPE: ClassVar[str] = "cancel"
    seq: int
    job: str


@dataclass(frozen=True, slots=True)
class JobProgress(Message):
    TYPE: ClassVar[str] = "progress"
    job: str
    done: int
    """Cases finished; a frame with a new `done` starts the next case."""
    total: int
    label: str = ""
    fraction: float | None = None
    """How far the current case is (0–1), for cases long enough to say (training runs)."""


@dataclass(frozen=True, slots=True)
class JobResult(Message):
    TYPE: ClassVar[str] = "result"
    job: str
    result: KernelResult | None = None
    model: ModelResult | None = None
    """A training run's result; a frame carries this or `result`."""

    @classmethod
    def of(cls, job: str, result: KernelResult | ModelResult) -> JobResult:
        if isinstance(result, ModelResult):
            return cls(job, model=result)
        return cls(job, result=result)


@dataclass(frozen=True, slots=True)
class JobEnd(Message):
    """The job is over, exactly once per Run: refused (a bad plan, or the agent is busy: nothing
    ran), done, cancelled or failed (the worker crashed, ran out of memory or timed out)."""

    TYPE: ClassVar[str] = "job_end"
    job: str
    state: JobState
    error: str | None = None
    wall: float = 0.0


@dataclass(frozen=True, slots=True)
class Event(Message):
    """Agent → every client: the server's health changed (an XID error, a degraded PCIe link,
    retired memory, a hardware slowdown…) or an alert rule of the agent's config fired or
    resolved. Never dropped; a condition still raised is sent again to each client that logs
    in. The server is the connection it came on, as for every frame."""

    TYPE: ClassVar[str] = "event"
    id: int
    """The agent's count of events since it started: a frame sent again keeps its id."""
    kind: str
    """What happened (docs/health.md lists the kinds): "xid", "pcie_link", "alert" …"""
    severity: Severity
    detail: str
    """In words, for a person."""
    wall: float
    """Agent wall clock when it happened."""
    gpu: int | None = None
    """NVML index of the GPU it concerns; None for the host."""
    state: EventState = "raised"
    """"raised": a condition began (a degraded link, a thermal slowdown, a firing rule);
    "resolved": the condition an earlier event of the same kind, GPU and rule raised ended;
    "once": it happened, with nothing to end (an XID, a count that grew)."""
    rule: str | None = None
    """An alert's rule name."""
    value: float | None = None
    """The figure behind it: the XID code, the temperature, the count."""

    @property
    def condition(self) -> tuple[str, int | None, str | None]:
        """What a resolve matches its raise by."""
        return (self.kind, self.gpu, self.rule)

    def open_at(self, now: float) -> bool:
        """Whether it still wants attention at `now` (the agent's clock): a condition raised
        (until its resolve), or a warning or worse that happened once within ONCE_OPEN_S."""
        if self.state == "raised":
            return True
        return self.state == "once" and self.severity != "info" and now - self.wall <= ONCE_OPEN_S


ONCE_OPEN_S = 600.0
"""How long an event that happened once (an XID, an error count that grew) stays open: nothing
resolves it, and a GPU that fell off the bus ten minutes ago is still news."""


MESSAGE_TYPES: dict[str, type[Message]] = {
    cls.TYPE: cls
    for cls in (
        *(Hello, Auth, Welcome, Subscribe, Sample, Ping, Pong, Error, Bye, Link),
        *(Run, Cancel, JobProgress, JobResult, JobEnd, Event),
    )
}


# --- encoding ------------------------------------------------------------------------------


def to_wire(message: Message) -> dict[str, Any]:
    """A message as the plain map msgpack sends."""
    if type(message) is Sample:
        return _sample_wire(message)
    wire = {"type": message.TYPE}
    wire.update(to_plain(message))
    return wire


def _sample_wire(sample: Sample) -> dict[str, Any]:
    """A sample's map built field by field: an agent makes one every tick, and the generic walk
    (to_plain) visits every value of every GPU to find that each is a plain number. Its maps of
    values are the sample's own (not copied): the caller only packs them."""
    return {
        "type": Sample.TYPE,
        "seq": sample.seq,
        "wall": sample.wall,
        "mono": sample.mono,
        "host": {"values": sample.host.values, "cpu_per_core": sample.host.cpu_per_core},
        "gpus": [
            {
                "index": gpu.index,
                "state": gpu.state,
                "values": gpu.values,
                "errors": gpu.errors,
                "processes": None if gpu.processes is None else to_plain(gpu.processes),
                "mig": None if gpu.mig is None else to_plain(gpu.mig),
            }
            for gpu in sample.gpus
        ],
    }


_SCALARS = (int, float, str, bytes, bool, type(None))
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def to_plain(obj: Any) -> Any:
    """Dataclasses as plain maps and lists, for msgpack and JSON.

    On the agent's hot path (every sample), so scalars return first and field names are cached.
    """
    cls = type(obj)
    if cls in _SCALARS:
        return obj
    if cls is dict:
        return {key: to_plain(value) for key, value in obj.items()}
    if cls is list:
        return [to_plain(item) for item in obj]
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(obj))
    return {name: to_plain(getattr(obj, name)) for name in names}


def from_wire(obj: Any) -> Message:
    """Validate a decoded map and build its message; anything off is a ProtocolError."""
    if not isinstance(obj, dict):
        raise ProtocolError(f"a message must be a map, got {type(obj).__name__}")
    kind = obj.get("type")
    if not isinstance(kind, str) or kind not in MESSAGE_TYPES:
        raise ProtocolError(f"unknown message type {kind!r}")
    return build(MESSAGE_TYPES[kind], obj, kind)
