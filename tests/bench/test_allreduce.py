"""All-reduce through the real engines on this CPU: Gloo across 2 processes, TensorFlow across 2
logical devices. A dead rank must end the run with an error, never hang or leave a process."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
from collections.abc import Callable

import psutil
import pytest

from dltui.bench.kernels.allreduce import run_allreduce
from dltui.bench.shapes import AllReduceCase
from dltui.protocol.bench_plans import KernelPlan
from dltui.protocol.bench_results import KernelResult
from tests.conftest import ROOT, require

CASES = [AllReduceCase(1000), AllReduceCase(100_000)]


def cpu_plan(framework: str, **overrides: object) -> KernelPlan:
    settings = {"warmup": 1, "iterations": 10, "max_seconds": 0.5} | overrides
    return KernelPlan(framework=framework, kinds=["allreduce"], device="cpu", gpus=2, **settings)


def descendants() -> set[int]:
    return {child.pid for child in psutil.Process().children(recursive=True)}


def run(
    plan: KernelPlan,
    cases: list[AllReduceCase],
    on_progress: Callable[[int, int, str], None] = lambda done, total, label: None,
) -> list[KernelResult]:
    """Run to the end and check that no rank process outlives the run."""
    before = descendants()
    results: list[KernelResult] = []
    run_allreduce(plan, cases, results.append, on_progress, lambda: False)
    assert descendants() - before == set()
    return results


def assert_measured(results: list[KernelResult], framework: str) -> None:
    assert [result.error for result in results] == [None, None]
    assert [result.params["floats"] for result in results] == [1000, 100_000]
    for result in results:
        assert (result.kind, result.direction, result.precision) == ("allreduce",) * 2 + ("fp32",)
        assert result.framework == framework
        assert result.device == "cpu"
        assert result.shape.endswith("×2")
        assert result.params["ranks"] == 2
        assert result.iterations >= 3
        for value in (result.median_s, result.min_s, result.gbps, result.busbw_gbps):
            assert value is not None and math.isfinite(value) and value > 0
        assert result.min_s <= result.median_s
        assert result.gbps == pytest.approx(result.params["bytes"] / result.median_s / 1e9)
        assert result.busbw_gbps == pytest.approx(result.gbps * 2 * (2 - 1) / 2)


def test_torch_gloo_across_two_processes():
    """Each rank also checks once per size that rank+1 summed over ranks is exactly 3: a wrong
    sum would be an error result."""
    require("torch")
    progress: list[tuple[int, int, str]] = []
    results = run(cpu_plan("torch"), CASES, lambda *step: progress.append(step))
    assert_measured(results, "torch")
    assert progress == [
        (0, 2, f"allreduce {CASES[0].label}"),
        (1, 2, f"allreduce {CASES[1].label}"),
    ]


def test_tensorflow_across_two_logical_cpu_devices():
    require("tensorflow")
    assert_measured(run(cpu_plan("tensorflow"), CASES), "tensorflow")


def rank_process(rank: int) -> psutil.Process:
    for child in psutil.Process().children():
        try:
            command = child.cmdline()
        except psutil.Error:  # a process that has just ended
            continue
        if "--rank" in command and command[command.index("--rank") + 1] == str(rank):
            return child
    raise AssertionError(f"no process for rank {rank}")


def test_a_dead_rank_ends_the_run_with_an_error():
    """Kill rank 1 when the first size is in: at least a second of work is left (each size's
    timed loop runs for max_seconds), so rank 0 is mid-run when its peer dies."""
    require("torch")
    results: list[KernelResult] = []

    def on_result(result: KernelResult) -> None:
        results.append(result)
        if len(results) == 1:
            rank_process(1).send_signal(signal.SIGKILL)

    before = descendants()
    plan = cpu_plan("torch", iterations=100_000, max_seconds=1.0)
    cases = [AllReduceCase(1000), AllReduceCase(100_000), AllReduceCase(100_000)]
    run_allreduce(plan, cases, on_result, lambda *_: None, lambda: False)
    assert descendants() - before == set()
    assert len(results) == 3
    assert results[0].error is None
    for result in results[1:]:
        assert result.error is not None
        assert result.error.startswith("rank 1 was killed by SIGKILL")
        assert result.shape.endswith("×2")


def test_stop_ends_the_run_between_sizes():
    """Stop once the first result is in: the ranks finish the size they are on, then all end."""
    require("torch")
    before = descendants()
    results: list[KernelResult] = []
    plan = cpu_plan("torch", iterations=100_000, max_seconds=0.2)  # each size takes ~0.2 s

    def stop() -> bool:
        return bool(results)

    run_allreduce(plan, [AllReduceCase(1000)] * 4, results.append, lambda *_: None, stop)
    assert 1 <= len(results) < 4
    assert all(result.error is None for result in results)
    assert descendants() - before == set()


LAY_OUT_ON_CPU = """
import sys
from dltui.bench.kernels.allreduce import run_allreduce
from dltui.bench.shapes import AllReduceCase
from dltui.protocol.bench_plans import KernelPlan

plan = KernelPlan(framework="torch", kinds=["allreduce"], device="cpu", gpus=4096)
results = []
run_allreduce(plan, [AllReduceCase(1000)], results.append, lambda *_: None, lambda: False)
print(results[0].error)
print("torch imported" if "torch" in sys.modules else "torch not imported")
"""


def test_a_cpu_plan_is_laid_out_without_importing_torch():
    """The worker lays out CPU ranks without torch: each rank imports it anyway, and the
    worker's own import (~1.2 s of CPU; 3 s under a test host's 0.4-CPU quota) would hold up
    the first rank's start."""
    require("torch")
    done = subprocess.run([sys.executable, "-c", LAY_OUT_ON_CPU], capture_output=True,
                          text=True, cwd=ROOT, timeout=60, check=True)  # fmt: skip
    error, imported = done.stdout.splitlines()
    assert error.startswith("the plan asks for 4096 CPU processes")
    assert imported == "torch not imported"


@pytest.mark.skipif(os.path.exists("/dev/nvidia0"), reason="this host has a GPU")
def test_a_missing_gpu_is_an_error_result_at_once():
    require("torch")
    plan = KernelPlan(framework="torch", kinds=["allreduce"], device="cuda")
    results = run(plan, CASES)
    assert [result.error for result in results] == ["PyTorch sees no CUDA GPU"] * 2


@pytest.mark.skipif(os.path.exists("/dev/nvidia0"), reason="this host has a GPU")
def test_an_exception_in_a_rank_becomes_its_error():
    require("tensorflow")
    plan = KernelPlan(framework="tensorflow", kinds=["allreduce"], device="cuda")
    results = run(plan, CASES)
    expected = "rank 0: RuntimeError: TensorFlow sees no GPU"
    assert [result.error for result in results] == [expected] * 2
