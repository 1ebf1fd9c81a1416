"""Framework backends: each times one (case, pass, precision) on its device and says how.

A backend module imports its framework inside its constructor, never at import time: the agent
imports dltui.bench freely and must stay framework-free; only the worker builds a backend.
What is shared lives here: the iteration budget and what a measurement carries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from dltui.bench.shapes import Case
from dltui.bench.timing import Budget, Timing
from dltui.protocol.bench_plans import KernelPlan

DEEPBENCH_ITERATIONS = {"gemm": 400, "conv": 300, "rnn": 100, "attention": 100, "bandwidth": 100}
"""DeepBench's timed calls per kernel (bandwidth and attention: ours, a 1 GiB copy takes ~20 ms
on PCIe; DeepBench has no attention)."""
ENERGY_RUN_S = 0.6
"""The sustained run a plan with energy adds to each compute case: room for two updates of
the H200's energy counter (every 100 ms) at least 0.4 s apart, whatever its phase."""
MIN_TIMED = 3
"""All-reduce's timed loop stops at max_seconds, but never before this many iterations."""
GPU_WARMUP = 5
"""DeepBench warms up once; a GPU gets a few more for cuDNN's algorithm search, the caching
allocator and clocks that ramp up."""
CPU_WARMUP = 1
COMPUTE_KINDS = ("gemm", "conv", "rnn", "attention")
SIXTEEN_BIT = ("fp16", "bf16", "mixed")
"""Precisions whose inputs are 16-bit (mixed: 16-bit in, 32-bit accumulation)."""


class Unsupported(Exception):
    """This backend cannot run this case here (no GPU for a host-device copy, a precision the
    framework lacks on this device): the case gets an error, the suite goes on."""


@dataclass(frozen=True, slots=True)
class Settings:
    """How one pass of a case is timed: the plan's choices, for one precision."""

    precision: str
    tuning: str
    """"searched" (the best algorithm and layout per pass) or "default" (the framework's)."""
    fill: str
    """"deepbench" or "random" (KernelPlan.fill)."""
    budget: Budget

    @property
    def values(self) -> str:
        return input_values(self.fill, self.precision)


def input_values(fill: str, precision: str) -> str:
    """What a case's inputs hold: "normal" (fill "random"), or DeepBench's: "uniform" over
    [0, 1) in 32-bit types and "zeros" in 16-bit ones (its half-precision fill converts those
    floats to integers)."""
    if fill == "random":
        return "normal"
    return "zeros" if precision in SIXTEEN_BIT else "uniform"


@dataclass(frozen=True, slots=True)
class Measurement:
    timing: Timing
    layout: str | None = None
    """The memory layout that won the search (convolutions: "nchw" or "nhwc")."""
    backend: str | None = None
    """The implementation that won the search (attention: "flash", "cudnn", …)."""


def budget_for(plan: KernelPlan, kind: str, on_gpu: bool) -> Budget:
    """The plan's counts, else DeepBench's; the time bound always applies. At least one
    warm-up, as DeepBench: the first call pays for tracing, algorithm search and allocation."""
    default_warmup = GPU_WARMUP if on_gpu else CPU_WARMUP
    return Budget(
        warmup=default_warmup if plan.warmup is None else max(1, plan.warmup),
        iterations=plan.iterations or DEEPBENCH_ITERATIONS[kind],
        max_seconds=plan.max_seconds,
        sustain_s=ENERGY_RUN_S if plan.energy and kind in COMPUTE_KINDS else 0.0,
    )


def error_text(exc: BaseException, limit: int = 300) -> str:
    """One line for KernelResult.error. TensorFlow puts the cause on the last line of a long
    message; PyTorch on the first."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    cause = lines[-1] if "in user code" in lines[0] else lines[0]
    text = f"{type(exc).__name__}: {cause}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Backend(Protocol):
    framework: str
    device: str
    """Where kernels run, the same spelling for every framework: "cuda:0" or "cpu"."""
    gpu_count: int
    """GPUs this framework sees (0 when it runs on the CPU): the peer-copy pairs."""
    gpu_uuids: list[str]
    """Each of those GPUs' UUID, in the framework's numbering; empty where it cannot say."""

    def time_case(self, case: Case, direction: str, settings: Settings) -> Measurement:
        """Time one pass of `case` as given (already padded). Raises Unsupported, or the
        framework's own error."""
        ...


def load_backend(framework: str, device: str) -> Backend:
    """Build the backend; this is where the framework gets imported."""
    if framework == "torch":
        from dltui.bench.backends.torch_backend import TorchBackend

        return TorchBackend(device)
    if framework == "tensorflow":
        from dltui.bench.backends.tensorflow_backend import TensorFlowBackend

        return TensorFlowBackend(device)
    raise ValueError(f"unknown framework {framework!r}")
