"""The names a plan may use and the bounds on its numbers: the vocabulary the client, the
agent, the TUI and the benchmark engine share."""

from __future__ import annotations

FRAMEWORKS = ("torch", "tensorflow")
SHAPE_SETS = ("tiny", "quick", "full")
COLLECTIVES = ("allreduce", "allgather", "reducescatter", "alltoall", "broadcast")
"""The collectives timed as nccl-tests times them: FSDP shards with all-gather and
reduce-scatter, mixture-of-experts routes tokens with all-to-all."""
KINDS = ("gemm", "conv", "rnn", "attention", "bandwidth", *COLLECTIVES)
PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "mixed")
"""mixed: 16-bit inputs and multiplies, 32-bit accumulation, as DeepBench means it."""
DEVICES = ("auto", "cuda", "cpu")
FILLS = ("deepbench", "random")
"""deepbench: DeepBench's own inputs, which its published figures and the V100 references were
measured on (16-bit: zeros; 32-bit: uniform over [0, 1)); random: normal values, as training
sees them (a GPU at its power cap clocks lower on them)."""
TUNINGS = ("searched", "default")
"""searched: the fastest algorithm and layout per pass (cudnnFind's way); default: the
framework's own choice."""
WHITEPAPER_MODELS = ("resnet50", "vgg16", "googlenet", "alexnet")
"""The whitepaper's four ImageNet CNNs: the "all models" plan."""
CNN_MODELS = (*WHITEPAPER_MODELS, "resnet20")
"""resnet20: He et al.'s CIFAR ResNet (0.27 M parameters), a small network whose gradient is
small beside its work, for CPUs and for checking `dltui predict` on shaped networks."""
GPT_MODELS = ("gpt-124m", "gpt-350m", "gpt-1.3b", "gpt-tiny")
"""GPT-style decoders (plans/gpt.py); gpt-tiny is a few hundred thousand parameters, for CPUs."""
MODELS = CNN_MODELS + GPT_MODELS
MIN_IMAGE = {"resnet50": 32, "vgg16": 32, "googlenet": 32, "alexnet": 67, "resnet20": 16}
"""The smallest image each CNN takes: AlexNet's three unpadded max-pools need 67 pixels."""
PARALLELISMS = ("ddp", "fsdp")
"""How a training run splits over its replicas: DDP (every replica holds the whole model) or
FSDP with full sharding (parameters, gradients and optimizer state sharded over the ranks)."""
MODEL_PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
"""fp16 and bf16 train mixed: 16-bit compute, fp32 weights (fp16 with loss scaling)."""

MAX_GPUS = 1024
MAX_ITERATIONS = 100_000
MAX_SECONDS = 600.0
MAX_TIMEOUT = 7 * 24 * 3600.0
MAX_STEPS = 10_000  # a step-time series of this length still fits well inside one frame
MAX_BATCH = 65_536
MAX_IMAGE = 1024
MAX_SEQ = 32_768
MAX_CLASSES = 100_000
CPU_RANKS = 2
"""Processes a CPU run uses on a server without GPUs (a single-server run and a scale-out alike)."""
MULTICAST_OFF = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
"""NVLink multicast stays off in every rank: it can put a shared host's GPUs out of service."""
CPUS_ENV = "DLTUI_CPUS"
"""Where the agent leaves the CPUs it could run on ("0,1,…") before keeping its own threads to
one (agent/footprint.py): its benchmark workers run on all of them again (bench/worker.py)."""
NVML_GPUS_ENV = "DLTUI_NVML_GPUS"
"""How many GPUs the agent's NVML reports, told to each benchmark worker: on "auto", a worker
whose framework cannot use them refuses rather than run on the CPU unseen (bench/cuda_guard.py)."""
RUN_FOLDERS_ENV = "DLTUI_RUN_FOLDERS"
"""The folder an agent gives a job, where the worker's runs keep theirs (bench/ranks.py): the
agent removes it once the worker is gone, with what a killed run left in it."""

DDP_BUCKET_BYTES = 25 * 2**20
"""DistributedDataParallel's bucket cap (bucket_cap_mb=25); dltui sets TensorFlow's packs
across servers to the same (bench/tf_strategy.py)."""
DDP_FIRST_BUCKET_BYTES = 2**20
"""DDP makes its first bucket small (1 MiB) so the first all-reduce starts early."""
