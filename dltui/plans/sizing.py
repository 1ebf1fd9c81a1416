"""How big a run is before it starts: how many cases or training runs a plan holds, about how
long that takes on a server, and the smaller defaults a CPU gets.

Shared by the launcher (a plan's size and duration per server) and `dltui bench` (said up
front), in words by formatting.describe_work. The counts match the engine's shape sets (a test
holds them to bench/shapes.py); the durations are estimates from runs on an H200 and on a
2-core CPU (Xeon, AMX), scaled by the CPU's cores, so they say "about": the live progress keeps
its own estimate from the pace.
"""

from __future__ import annotations

from dataclasses import replace

from dltui.plans import gpt
from dltui.plans.names import COLLECTIVES
from dltui.protocol.bench_plans import KernelPlan, ModelPlan, Plan
from dltui.protocol.inventory import Inventory

OTHER_COLLECTIVES = COLLECTIVES[1:]
"""All-reduce runs DeepBench's sizes; the others nccl-tests' sweep of 1 KB to 4 GB."""
SET_CASES = {
    "tiny": {"gemm": 4, "conv": 3, "rnn": 3, "attention": 3, "allreduce": 5, "bandwidth": 2}
    | dict.fromkeys(OTHER_COLLECTIVES, 2),
    "quick": {"gemm": 10, "conv": 10, "rnn": 10, "attention": 12, "allreduce": 7, "bandwidth": 3}
    | dict.fromkeys(OTHER_COLLECTIVES, 6),
    "full": {"gemm": 160, "conv": 94, "rnn": 53, "attention": 24, "allreduce": 7, "bandwidth": 3}
    | dict.fromkeys(OTHER_COLLECTIVES, 12),
}
"""Cases per kind in each shape set (bandwidth: sizes; each size is several copies)."""
PASSES = {"gemm": 1, "conv": 3, "rnn": 2, "attention": 2}
"""Timed passes of each case: forward; forward, backward-data, backward-weights; forward and
forward+backward (RNNs and attention)."""

PROFILED_STEPS = 3
"""Steps a one-replica torch CNN run's step profile takes the median of (the what-if's input)."""
OVERHEAD_STEPS = 4
"""Steps bare, then as many wrapped in DDP, whose medians give DDP's own cost."""
PROFILE_EXTRA_STEPS = 1 + PROFILED_STEPS + 2 * OVERHEAD_STEPS + 1
"""What a one-replica torch CNN run steps after its timed ones (bench/training/torch_train.py):
an untimed eager step, the profiled ones, the bare ones, DDP's first (its buckets) and the
wrapped ones. On a CPU that is about as many again as the default 12 steps."""

CPU_WARMUP, CPU_STEPS = 2, 10
"""Training steps on a CPU by default (a GPU's are the plan's: 10 and 100)."""
CPU_BATCH = {"resnet50": 16, "vgg16": 8, "googlenet": 32, "alexnet": 32,
             "resnet20": 32} | gpt.CPU_BATCH  # fmt: skip
"""Images per process and step on a CPU by default: a step of a second or two on a few cores
(tf_cnn_benchmarks' batch of 512 makes an AlexNet step on two cores take most of a minute)."""

TRAIN_GFLOP = {"resnet50": 3 * 4.1, "vgg16": 3 * 15.5, "googlenet": 3 * 1.5, "alexnet": 3 * 0.72,
               "resnet20": 3 * 2.0}  # fmt: skip
"""A training step's work per 224-pixel image: three times the forward pass (ResNet-20's 41
MFLOP at 32 pixels, times 49)."""

STARTUP_S = {"gpu": 20.0, "cpu": 8.0}
"""Starting the worker: the framework's import, the device, the first compile."""
CASE_S = {
    "gpu": {"gemm": 0.8, "conv": 2.5, "rnn": 1.5, "attention": 3.0, "bandwidth": 1.5}
    | dict.fromkeys(COLLECTIVES, 0.7),
    "cpu": {"gemm": 41.0, "conv": 10.0, "rnn": 260.0, "attention": 30.0, "bandwidth": 1.0}
    | dict.fromkeys(COLLECTIVES, 1.0),
}
"""Seconds per timed pass of a quick-set case: on an H200 (its recordings: 17 cases in 18 s),
on a 2-core Xeon (docs/results/run-estimates.md: GEMM and convolution measured, RNNs
measured in part; a case whose iteration outlasts the time bound runs it about 17 times:
warm-up, sizing, samples, and DeepBench's largest GEMM is 15 s an iteration in fp32 there, its
longest GRU's forward and backward about 2.5 minutes by its FLOPs). The full set's cases are
of the same sizes; the tiny set's take well under the time bound. Attention: estimates, not yet
measured."""
TINY_CASE_S = 0.5
TRAIN_RATE = {"gpu": 80e12, "cpu": 0.05e12}
"""Useful FLOP/s of a training step: an H200 in bf16 (7,000 ResNet-50 images/s), a 2-core
CPU in fp32 (the four CNNs at 36-51 GFLOP/s: docs/results/run-estimates.md)."""
COMPILE_S = {"gpu": 60.0, "cpu": 5.0}
"""Building a model before its first step: torch.compile takes a minute on a GPU."""
REFERENCE_CORES = 2


def _step_flops(plan: ModelPlan, model: str, device: str) -> float:
    """One replica's training step: its images' work, or its tokens'."""
    if gpt.is_gpt(model):
        shape = gpt.SHAPES[model]
        seq = plan.seq_len or (gpt.CPU_SEQ[model] if device == "cpu" else shape.seq)
        batch = plan.batch or (CPU_BATCH[model] if device == "cpu" else gpt.GPU_BATCH[model])
        return gpt.train_flops_per_token(shape, seq) * batch * seq
    batch = plan.batch or (CPU_BATCH[model] if device == "cpu" else 256)
    return TRAIN_GFLOP[model] * 1e9 * batch * (plan.image_size / 224) ** 2


def on_cpu(plan: Plan, inventory: Inventory) -> bool:
    return plan.device == "cpu" or not inventory.gpus


def kernel_cases(plan: KernelPlan, inventory: Inventory) -> int:
    """Timed results the plan makes on this server: the progress bar's total."""
    sizes = SET_CASES[plan.shape_set]
    total = 0
    for kind in plan.kinds:
        if kind in COLLECTIVES:
            total += sizes[kind]
        elif kind == "bandwidth":
            gpus = 0 if on_cpu(plan, inventory) else len(inventory.gpus)
            copies = 1 if gpus == 0 else 5 + gpus * (gpus - 1)
            total += sizes[kind] * copies
        else:
            total += sizes[kind] * PASSES[kind] * len(plan.precisions)
    return total


def model_runs(plan: ModelPlan) -> int:
    return len(plan.models) * len(plan.gpus)


def for_cpu(plan: ModelPlan, warmup_given: bool = False, steps_given: bool = False) -> ModelPlan:
    """The plan with a CPU's step counts where they were not asked for."""
    return replace(
        plan,
        warmup=plan.warmup if warmup_given else CPU_WARMUP,
        steps=plan.steps if steps_given else CPU_STEPS,
    )


def _cpu_scale(inventory: Inventory) -> float:
    return REFERENCE_CORES / max(min(inventory.cpu_count, 64), 1)


def estimate_s(plan: Plan, inventory: Inventory) -> float:
    """About how long the plan runs on this server, in seconds."""
    device = "cpu" if on_cpu(plan, inventory) else "gpu"
    scale = _cpu_scale(inventory) if device == "cpu" else 1.0
    if isinstance(plan, KernelPlan):
        seconds = 0.0
        for kind in plan.kinds:
            per = TINY_CASE_S if plan.shape_set == "tiny" else CASE_S[device][kind] * scale
            seconds += per * kernel_cases(replace(plan, kinds=[kind]), inventory)
        return STARTUP_S[device] + seconds
    seconds = 0.0
    for model in plan.models:
        work = _step_flops(plan, model, device)
        step = work / TRAIN_RATE[device] * scale
        for gpus in plan.gpus:
            processes = gpus or max(len(inventory.gpus), 1)
            # CPU processes share the cores: each step's work grows with them.
            per_step = step * (processes if device == "cpu" else 1)
            steps = plan.warmup + plan.steps + _profile_steps(plan, model, processes)
            seconds += COMPILE_S[device] + steps * per_step
    return STARTUP_S[device] + seconds


def _profile_steps(plan: ModelPlan, model: str, processes: int) -> int:
    """Only torch profiles, a CNN, on one replica (TensorFlow's profile is its gradients' sizes)."""
    profiled = plan.framework == "torch" and not gpt.is_gpt(model)
    return PROFILE_EXTRA_STEPS if profiled and processes == 1 and plan.cluster is None else 0
