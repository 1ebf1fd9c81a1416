"""Padding as DeepBench pads, and results that carry the padded shape but count the stated one."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from dltui.bench.padding import padded
from dltui.bench.shapes import ConvCase, GemmCase, RnnCase, cases
from dltui.plans import formulas
from tests.conftest import require

REFERENCE = Path(__file__).resolve().parents[2] / "benchmarks" / "reference"


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        # NN and TN: m and k (n is no leading dimension there)
        (GemmCase(5124, 9124, 2560), GemmCase(5128, 9124, 2560)),
        (GemmCase(35, 8457, 2560, a_t=True), GemmCase(40, 8457, 2560, a_t=True)),
        (GemmCase(7680, 5481, 2560, a_t=True), GemmCase(7680, 5481, 2560, a_t=True)),
        # NT: m and n
        (GemmCase(4096, 7133, 4096, b_t=True), GemmCase(4096, 7136, 4096, b_t=True)),
        (GemmCase(4096, 7000, 4099, b_t=True), GemmCase(4096, 7000, 4099, b_t=True)),
        # TT: all three, once any is off
        (GemmCase(8, 16, 5, True, True), GemmCase(8, 16, 8, True, True)),
    ],
)
def test_gemm_padding_follows_the_transposes(case, expected):
    assert padded(case, "mixed") == expected
    assert padded(case, "bf16") == expected
    assert padded(case, "fp32") == case and padded(case, "tf32") == case


def test_conv_padding_rounds_channels_only():
    case = ConvCase(16, 1, 161, 700, 32, 5, 20, 0, 0, 2, 2)
    assert padded(case, "fp16") == ConvCase(16, 8, 161, 700, 32, 5, 20, 0, 0, 2, 2)
    assert padded(case, "fp32") == case
    assert padded(ConvCase(8, 3, 224, 224, 35, 3, 3), "bf16").k == 40
    rnn = RnnCase("lstm", 1535, 3, 7)
    assert padded(rnn, "mixed") is rnn


def test_every_full_set_gemm_that_deepbench_pads_is_padded_here():
    """The cases the issue named (dimensions 7133, 5481, 8457, 9124, 35) and no others change
    only where DeepBench's rule says; a padded case is never smaller."""
    for case in cases("full", "gemm"):
        timed = padded(case, "mixed")
        assert isinstance(timed, GemmCase) and isinstance(case, GemmCase)
        assert (timed.m, timed.n, timed.k) >= (case.m, case.n, case.k)
        assert all(
            x - y < 8
            for x, y in zip((timed.m, timed.n, timed.k), (case.m, case.n, case.k), strict=True)
        )
    worst = GemmCase(4096, 7133, 4096, b_t=True)
    assert worst in cases("full", "gemm") and padded(worst, "mixed").label == "4096x7136x4096 NT"


def test_the_suite_reports_the_padded_shape_and_counts_the_stated_one():
    require("torch")
    from dltui.bench.backends import load_backend
    from dltui.bench.suite import _Item, measure
    from dltui.protocol.bench_plans import KernelPlan

    backend = load_backend("torch", "cpu")
    case = GemmCase(60, 30, 36)
    plan = KernelPlan(device="cpu", iterations=3, max_seconds=0.02)
    result = measure(backend, plan, _Item("gemm", "bf16", case, "fwd"))
    assert result.error is None
    assert result.shape == "60x30x36 NN" and result.padded_shape == "64x30x40 NN"
    assert result.tflops == pytest.approx(formulas.tflops(case.flops, result.median_s))
    assert result.tuning == "searched" and result.method in ("batch", "each")
    unpadded = measure(
        backend, KernelPlan(device="cpu", iterations=3, max_seconds=0.02, pad=False),
        _Item("gemm", "bf16", case, "fwd"),
    )  # fmt: skip
    assert unpadded.padded_shape is None and unpadded.shape == result.shape


def test_the_v100_ratio_is_given_only_where_the_run_is_set_up_as_deepbenchs():
    require("torch")
    from dltui.bench.backends import load_backend
    from dltui.bench.suite import _Item, measure
    from dltui.protocol.bench_plans import KernelPlan

    backend = load_backend("torch", "cpu")
    case = cases("quick", "gemm")[0]
    item = _Item("gemm", "fp32", case, "fwd")
    fast = {"device": "cpu", "iterations": 1, "max_seconds": 0.01}
    like = measure(backend, KernelPlan(**fast), item)
    assert like.reference_gpu == "V100" and like.ratio is not None
    for unlike in (KernelPlan(**fast, pad=False), KernelPlan(**fast, tuning="default")):
        result = measure(backend, unlike, item)
        assert result.ratio is None and result.reference_gpu is None


def test_padding_explains_deepbenchs_own_h200_figures():
    """In the reference measured on the H200, every shape DeepBench pads had an odd dimension:
    the padding rule, not a guess, is what separates them."""
    with (REFERENCE / "deepbench_h200_gemm_measured.csv").open() as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == 160
    changed = 0
    for row in rows:
        case = GemmCase(int(row["m"]), int(row["n"]), int(row["k"]),
                        row["a_t"] == "t", row["b_t"] == "t")  # fmt: skip
        if padded(case, "mixed") != case:
            changed += 1
            assert any(dim % 8 for dim in (case.m, case.n, case.k))
    assert changed > 0
