"""What a benchmark measured, as a `result` frame carries it: a timed kernel case
(`KernelResult`) or a training run (`ModelResult`, with one step taken apart: `StepProfile`)."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    compute_lost_s: float | None = None
    """Seconds a rank's compute lost per call of the collective running beside it, the slowest
    rank's (an all-reduce on CPU processes: what communication takes from backward there)."""
    backend: str | None = None
    """The implementation that won a search among several and was timed: an attention case's
    scaled_dot_product_attention backend ("flash", "cudnn", "efficient", "math")."""
    case_s: float | None = None
    """Seconds the worker spent on the whole case, from starting it to its result (set-up,
    warm-up, any search and the timed runs): how long its phase lasted, however its frames
    reached a client. None in results from before it was measured."""
