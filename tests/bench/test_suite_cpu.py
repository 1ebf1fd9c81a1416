"""The whole suite on this machine's CPU, with PyTorch and with TensorFlow, on the tiny set.

The GPU paths (CUDA events, copies, peer pairs) cannot run here; the event loop's batching is
checked against a stand-in for torch.cuda that stamps events with the host clock.
"""

from __future__ import annotations

import math
import os
import time
from types import SimpleNamespace

import pytest

from dltui.bench.backends import Budget
from dltui.bench.shapes import cases
from dltui.bench.suite import run_plan
from dltui.protocol.messages import KernelPlan, KernelResult

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
FAST = {"shape_set": "tiny", "iterations": 5, "max_seconds": 0.02, "device": "cpu"}
PASSES = {"gemm": {"fwd"}, "conv": {"fwd", "bwd_data", "bwd_weights"}, "rnn": {"fwd", "fwd+bwd"}}


def run(plan: KernelPlan, should_stop=lambda: False) -> tuple[list[KernelResult], list[tuple]]:
    results: list[KernelResult] = []
    progress: list[tuple] = []
    run_plan(plan, results.append, lambda *args: progress.append(args), should_stop)
    return results, progress


def check_plausible(results: list[KernelResult], plan: KernelPlan) -> None:
    for r in results:
        assert r.error is None, (r.shape, r.direction, r.error)
        assert r.device == "cpu" and r.framework == plan.framework
        assert 1 <= r.iterations <= plan.iterations
        assert 0 < r.min_s <= r.median_s < 1.0
        assert r.spread_s >= 0 and math.isfinite(r.spread_s)
        assert 1e-6 < r.tflops < 10, (r.shape, r.tflops)
        assert r.params and all(type(v) is int for v in r.params.values())


@pytest.mark.parametrize("framework", ["torch", "tensorflow"])
def test_tiny_set_on_cpu(framework):
    pytest.importorskip(framework)
    plan = KernelPlan(framework=framework, kinds=["gemm", "conv", "rnn"], **FAST)
    results, progress = run(plan)
    expected = sum(len(cases("tiny", kind)) * len(PASSES[kind]) for kind in PASSES)
    assert len(results) == expected
    check_plausible(results, plan)
    for kind, passes in PASSES.items():
        assert {r.direction for r in results if r.kind == kind} == passes
    assert [p[0] for p in progress] == list(range(expected + 1))
    assert {p[1] for p in progress} == {expected}
    assert progress[-1] == (expected, expected, "done")


@pytest.mark.parametrize("precision", ["tf32", "fp16", "bf16", "mixed"])
def test_every_precision_runs_gemm_on_torch_cpu(precision):
    pytest.importorskip("torch")
    plan = KernelPlan(kinds=["gemm"], precisions=[precision], **FAST)
    results, _ = run(plan)
    assert [r.precision for r in results] == [precision] * len(cases("tiny", "gemm"))
    check_plausible(results, plan)


def test_sixteen_bit_precisions_run_on_tensorflow_cpu():
    pytest.importorskip("tensorflow")
    tensorflow = {
        "framework": "tensorflow",
        "kinds": ["gemm", "rnn"],
        "precisions": ["bf16", "mixed"],
    }
    plan = KernelPlan(**(FAST | tensorflow))
    results, _ = run(plan)
    assert {r.precision for r in results} == {"bf16", "mixed"}
    check_plausible(results, plan)


def test_unsupported_precision_is_an_error_result(monkeypatch):
    pytest.importorskip("torch")
    from dltui.bench.backends import torch_backend

    real = torch_backend.gemm_step

    def half_missing(torch, case, dtype, device):
        if dtype == torch.float16:  # as older CPU builds answered
            raise RuntimeError("\"addmm_impl_cpu_\" not implemented for 'Half'")
        return real(torch, case, dtype, device)

    monkeypatch.setattr(torch_backend, "gemm_step", half_missing)
    results, _ = run(KernelPlan(kinds=["gemm"], precisions=["fp16", "fp32"], **FAST))
    failed = [r for r in results if r.precision == "fp16"]
    assert failed and all(
        r.error == "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'" for r in failed
    )
    assert all(r.error is None and r.tflops for r in results if r.precision == "fp32")


def test_bandwidth_on_cpu_is_host_memcpy_with_torch_and_an_error_with_tensorflow():
    pytest.importorskip("torch")
    results, _ = run(KernelPlan(kinds=["bandwidth"], **FAST))
    assert [r.shape for r in results] == ["host memcpy 1 MiB", "host memcpy 4 MiB"]
    assert all(r.error is None and r.gbps > 0.1 and r.tflops is None for r in results)
    assert all(r.precision == "" and r.direction == "d2d" for r in results)
    pytest.importorskip("tensorflow")
    results, _ = run(KernelPlan(framework="tensorflow", kinds=["bandwidth"], **FAST))
    assert len(results) == 2 and all("torch backend" in r.error for r in results)


def test_should_stop_ends_the_run_after_the_current_case():
    pytest.importorskip("torch")
    results: list[KernelResult] = []
    progress: list[tuple] = []
    run_plan(
        KernelPlan(kinds=["gemm", "conv"], **FAST),
        results.append,
        lambda *args: progress.append(args),
        lambda: len(results) >= 2,
    )
    assert len(results) == 2
    assert len(progress) == 2  # no "done": the run was cut short


def test_cuda_asked_for_without_a_gpu_fails_the_plan():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(RuntimeError, match="no CUDA GPU"):
        run(KernelPlan(kinds=["gemm"], **(FAST | {"device": "cuda"})))


class FakeEvent:
    """A CUDA event stamped with the host clock when recorded."""

    def __init__(self, enable_timing: bool) -> None:
        self.stamp = 0.0

    def record(self) -> None:
        self.stamp = time.perf_counter()

    def synchronize(self) -> None:
        return

    def elapsed_time(self, end: FakeEvent) -> float:
        return (end.stamp - self.stamp) * 1e3


FAKE_TORCH = SimpleNamespace(cuda=SimpleNamespace(Event=FakeEvent, synchronize=lambda: None))


@pytest.mark.parametrize(
    ("iterations", "max_seconds", "low", "high"),
    [(7, 10.0, 7, 7), (400, 0.05, 3, 60), (2, 0.0001, 2, 2), (400, 0.0001, 3, 3)],
)
def test_cuda_event_loop_batches_to_the_budget(iterations, max_seconds, low, high):
    from dltui.bench.backends.torch_backend import cuda_event_times

    calls = []
    budget = Budget(warmup=2, iterations=iterations, max_seconds=max_seconds)
    work = lambda: calls.append(time.sleep(0.002))  # noqa: E731  ok: a fake kernel of known length
    times = cuda_event_times(FAKE_TORCH, work, budget)
    assert low <= len(times) <= high
    warmups = 2 if max_seconds > 0.004 else 1  # warm-up also stops at max_seconds, after one
    assert len(calls) == len(times) + warmups
    assert all(0.0015 < t < 0.05 for t in times)


@pytest.mark.parametrize("transposes", [(False, False), (True, False), (False, True), (True, True)])
def test_torch_gemm_is_deepbench_column_major_product(transposes):
    """Read the buffers column-major, as cuBLAS does: the result must be op(A)·op(B)."""
    torch = pytest.importorskip("torch")
    np = pytest.importorskip("numpy")
    from dltui.bench.backends.torch_backend import gemm_operands
    from dltui.bench.shapes import GemmCase

    case = GemmCase(5, 3, 4, *transposes)
    m, n, k = case.m, case.n, case.k
    a_op, b_op = gemm_operands(torch, case, torch.float64, "cpu")

    def column_major(view, rows: int, cols: int):
        stored = view if view.is_contiguous() else view.t()
        assert stored.is_contiguous()
        return stored.flatten().numpy().reshape((rows, cols), order="F")

    a = column_major(a_op, k, m).T if case.a_t else column_major(a_op, m, k)  # op(A): m×k
    b = column_major(b_op, n, k).T if case.b_t else column_major(b_op, k, n)  # op(B): k×n
    c = torch.mm(b_op, a_op).contiguous().flatten().numpy().reshape((m, n), order="F")
    np.testing.assert_allclose(c, a @ b, rtol=1e-12)
