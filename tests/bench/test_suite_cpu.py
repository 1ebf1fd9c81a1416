"""The whole suite on this machine's CPU, with PyTorch and with TensorFlow, on the tiny set.

The GPU paths (CUDA events and graphs, copies, peer pairs) cannot run here: the timing methods
are checked against a simulated GPU in test_timing.py, and run for real in tests/gpu.
"""

from __future__ import annotations

import math
import os
import time

import pytest

from dltui.bench.shapes import cases
from dltui.bench.suite import run_plan
from dltui.protocol.bench_plans import KernelPlan
from dltui.protocol.bench_results import KernelResult
from tests.conftest import IN_TENSORFLOW, require

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
        assert r.method in ("batch", "each", "loop")
        assert r.samples >= 5 and r.iterations == r.samples * r.per_sample
        assert 0 < r.min_s <= r.median_s < 1.0
        assert r.spread_s >= 0 and math.isfinite(r.spread_s)
        assert 1e-6 < r.tflops < 10, (r.shape, r.tflops)
        assert r.params and all(type(v) is int for v in r.params.values())
        assert r.fill == plan.fill


@pytest.mark.parametrize("framework", ["torch", pytest.param("tensorflow", marks=IN_TENSORFLOW)])
def test_tiny_set_on_cpu(framework):
    require(framework)
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
    require("torch")
    plan = KernelPlan(kinds=["gemm"], precisions=[precision], **FAST)
    results, _ = run(plan)
    assert [r.precision for r in results] == [precision] * len(cases("tiny", "gemm"))
    check_plausible(results, plan)


@IN_TENSORFLOW
def test_sixteen_bit_precisions_run_on_tensorflow_cpu():
    require("tensorflow")
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
    require("torch")
    from dltui.bench.backends import torch_backend

    real = torch_backend.gemm_step

    def half_missing(torch, case, dtype, device, fill):
        if dtype == torch.float16:  # as older CPU builds answered
            raise RuntimeError("\"addmm_impl_cpu_\" not implemented for 'Half'")
        return real(torch, case, dtype, device, fill)

    monkeypatch.setattr(torch_backend, "gemm_step", half_missing)
    results, _ = run(KernelPlan(kinds=["gemm"], precisions=["fp16", "fp32"], **FAST))
    failed = [r for r in results if r.precision == "fp16"]
    assert failed and all(
        r.error == "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'" for r in failed
    )
    assert all(r.error is None and r.tflops for r in results if r.precision == "fp32")


@IN_TENSORFLOW
def test_bandwidth_on_cpu_is_host_memcpy_with_torch_and_an_error_with_tensorflow():
    require("torch")
    results, _ = run(KernelPlan(kinds=["bandwidth"], **FAST))
    assert [r.shape for r in results] == ["host memcpy 1 MiB", "host memcpy 4 MiB"]
    assert all(r.error is None and r.gbps > 0.1 and r.tflops is None for r in results)
    assert all(r.precision == "" and r.direction == "d2d" for r in results)
    require("tensorflow")
    results, _ = run(KernelPlan(framework="tensorflow", kinds=["bandwidth"], **FAST))
    assert len(results) == 2 and all("torch backend" in r.error for r in results)


def test_should_stop_ends_the_run_after_the_current_case():
    require("torch")
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


@pytest.mark.parametrize(
    ("precision", "fill", "expected"),
    [("mixed", "deepbench", "zeros"), ("bf16", "deepbench", "zeros"),
     ("fp32", "deepbench", "uniform"), ("mixed", "random", "normal")],
)  # fmt: skip
def test_inputs_are_deepbenchs_unless_random_ones_are_asked(precision, fill, expected):
    """DeepBench's 16-bit inputs are its uniform [0, 1) floats converted to integers: zeros."""
    torch = pytest.importorskip("torch")
    from dltui.bench.backends import Settings
    from dltui.bench.backends.torch_backend import gemm_operands, set_precision
    from dltui.bench.shapes import GemmCase

    settings = Settings(precision, "searched", fill, budget=None)  # type: ignore[arg-type]
    dtype = set_precision(torch, precision)
    a, b = gemm_operands(torch, GemmCase(64, 32, 48), dtype, "cpu", settings.values)
    both = torch.cat([a.flatten(), b.flatten()]).float()
    found = "zeros" if not both.any() else "uniform" if both.min() >= 0 else "normal"
    assert found == expected
    assert KernelPlan().fill == "deepbench"


@IN_TENSORFLOW
def test_tensorflow_device_loop_runs_every_iteration():
    """The loop is what TensorFlow times short kernels with: were the product hoisted out of
    it as loop-invariant, 32 iterations would cost what one does."""
    tf = pytest.importorskip("tensorflow")
    from dltui.bench.backends.tensorflow_backend import device_loop, gemm_kernel
    from dltui.bench.shapes import GemmCase

    kernel = gemm_kernel(tf, GemmCase(384, 384, 384), tf.float32)

    def best_of(run, tries: int = 5) -> float:
        """CPU seconds (every thread of this process): wall time swings with the machine's load."""
        times = []
        for _ in range(tries):
            begin = time.process_time()
            run()
            times.append(time.process_time() - begin)
        return min(times)

    one, many = best_of(device_loop(tf, kernel, 1)), best_of(device_loop(tf, kernel, 32))
    assert many > 8 * one, (one, many)  # hoisted, the two would cost about the same


def test_convolutions_search_both_layouts_unless_told_to_keep_the_default():
    require("torch")
    plan = KernelPlan(kinds=["conv"], **FAST)
    searched, _ = run(plan)
    assert {r.layout for r in searched} <= {"nchw", "nhwc"}
    assert all(r.tuning == "searched" for r in searched)
    default, _ = run(KernelPlan(kinds=["conv"], tuning="default", **FAST))
    assert {r.layout for r in default} == {"nchw"} and {r.tuning for r in default} == {"default"}
