"""Pass/fail checks on results: parsing, matching, the lines a failure prints, a chosen
baseline and a plan file's [assert] table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dltui.plans.assertions import (
    AssertionSyntaxError,
    baseline_of,
    cases,
    failures,
    parse_assertion,
)
from dltui.plans.check import PlanError
from dltui.plans.files import load_plan_file
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.protocol.wire import to_plain
from dltui.recording.results import results_in
from tests.conftest import ROOT

GEMM = KernelResult("gemm", "torch", "cuda:0", "bf16", "fwd", "4096x4096x4096 NN", tflops=650.0,
                    ratio=2.2, median_s=0.0002)  # fmt: skip
SLOW = KernelResult("gemm", "torch", "cuda:0", "bf16", "fwd", "1760x128x1760 NN", tflops=210.0,
                    ratio=0.8, median_s=0.0001)  # fmt: skip
COPY = KernelResult("bandwidth", "torch", "cuda:0", "fp32", "h2d", "1 GiB", gbps=55.3,
                    nominal_gbps=63.0)  # fmt: skip
BROKEN = KernelResult("conv", "torch", "cuda:0", "bf16", "fwd", "N32", error="out of memory")
ONE = ModelResult("resnet50", "torch", "cuda", "bf16", 1, 256, images_per_s=1000.0)
EIGHT = ModelResult("resnet50", "torch", "cuda", "bf16", 8, 256, images_per_s=7200.0)
KERNELS = [("gpu-01", GEMM), ("gpu-01", SLOW), ("gpu-01", COPY), ("gpu-01", BROKEN)]
MODELS = [("gpu-01", ONE), ("gpu-01", EIGHT)]


def load_baseline(path: Path):
    """As `bench --baseline FILE` reads it."""
    return baseline_of(results_in(path, "baseline"), path)


def check(*texts: str, baseline=None) -> list[str]:
    return failures([parse_assertion(t) for t in texts], cases(KERNELS, MODELS, baseline))


def test_passing_assertions_print_nothing() -> None:
    passing = ("tflops>=200 kind=gemm precision=bf16", "efficiency>=0.8 kind=bandwidth",
               "images_per_second>=1000 model=resnet50", "images_per_s>=7000 gpus=8")  # fmt: skip
    assert check(*passing) == []


def test_each_failure_is_one_line_naming_the_case_and_the_figure() -> None:
    assert check("tflops>=600 kind=gemm precision=bf16") == [
        "FAIL tflops>=600 kind=gemm precision=bf16: gpu-01: gemm 1760x128x1760 NN fwd bf16: "
        "210 TFLOP/s"
    ]
    assert check("efficiency>=0.95") == [
        "FAIL efficiency>=0.95: gpu-01: bandwidth 1 GiB h2d fp32: 0.8778 of the link",
        # a case that failed fails every assertion whose filters it matches
        "FAIL efficiency>=0.95: gpu-01: conv N32 fwd bf16 failed: out of memory",
        "FAIL efficiency>=0.95: gpu-01: resnet50 ×8 GPU bf16 batch 256: 0.9 of ideal",
    ]
    assert check("ratio>=0.9 kind=gemm") == [
        "FAIL ratio>=0.9 kind=gemm: gpu-01: gemm 1760x128x1760 NN fwd bf16: 0.8 ×"]  # fmt: skip


def test_a_failed_case_and_an_assertion_that_matches_nothing_fail() -> None:
    assert check("tflops>=1 kind=conv") == [
        "FAIL tflops>=1 kind=conv: gpu-01: conv N32 fwd bf16 failed: out of memory"]  # fmt: skip
    assert check("images_per_second>=1 model=vgg16") == [
        "FAIL images_per_second>=1 model=vgg16: no result matched"]  # fmt: skip


def test_a_shape_matches_by_its_dimensions() -> None:
    assert check("tflops>=600 shape=4096x4096x4096") == []


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("tflops=>600", 'is not "FIGURE OP NUMBER [key=value ...]"'),
        ("speed>=1", "unknown figure 'speed' (one of: accuracy, busbw_gbps, efficiency, gbps,"),
        ("tflops>=600 kind", "'kind' is not key=value"),
        ("tflops>=600 colour=red", "unknown key 'colour' (one of: batch, device, direction,"),
        # Each of these would match nothing, and fail only once the whole run had run.
        ("tflops>=1 kind=gemmm", "unknown kind 'gemmm' (one of: gemm, conv,"),
        ("ratio>=0.9 precision=bf17", "unknown precision 'bf17' (one of: fp32,"),
        ("tflops>=1 kind=gemm kind=conv", "kind given twice"),
        ("mfu>=0.4 kind=gemm", "mfu is a training result's figure, and no training result has"),
        ("tflops>=1 model=resnet50", "tflops is a kernel result's figure, and no kernel result"),
    ],
)
def test_a_bad_assertion_says_why(text: str, error: str) -> None:
    with pytest.raises(AssertionSyntaxError, match=None) as raised:
        parse_assertion(text)
    assert error in str(raised.value)


def test_ratios_against_a_chosen_baseline(tmp_path) -> None:
    path = tmp_path / "baseline.json"
    older = [
        to_plain(GEMM) | {"tflops": 700.0, "server": "old"},
        to_plain(SLOW) | {"server": "old"},
    ]
    path.write_text(
        json.dumps({"results": older, "models": [to_plain(EIGHT) | {"efficiency": {}}]})
    )
    baseline = load_baseline(path)
    assert check("ratio>=0.95 kind=gemm", baseline=baseline) == [
        "FAIL ratio>=0.95 kind=gemm: gpu-01: gemm 4096x4096x4096 NN fwd bf16: 0.9286 ×"
    ]
    assert check("ratio>=1 model=resnet50 gpus=8", baseline=baseline) == []
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(PlanError, match="not a dltui bench --json file"):
        load_baseline(tmp_path / "bad.json")


def test_a_case_the_baseline_lacks_fails_its_ratio_rather_than_passing_unseen(tmp_path) -> None:
    """With one of two GEMMs in the baseline, 'ratio>=0.9' once passed having checked one."""
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"results": [to_plain(GEMM)], "models": []}))
    assert check("ratio>=0.9 kind=gemm", baseline=load_baseline(path)) == [
        "FAIL ratio>=0.9 kind=gemm: gpu-01: gemm 1760x128x1760 NN fwd bf16: not in the baseline"
    ]


def test_a_baseline_of_two_servers_or_another_image_size_is_no_baseline(tmp_path) -> None:
    """A two-server file kept whichever server's figure came last, case by case; a 96 px run
    was held to a 32 px one's images/s."""
    two = tmp_path / "two.json"
    two.write_text(
        json.dumps(
            {
                "results": [
                    to_plain(GEMM) | {"server": "gpu-01"},
                    to_plain(SLOW) | {"server": "gpu-02"},
                ],
                "models": [],
            }
        )
    )
    with pytest.raises(PlanError, match=r"holds results of 2 servers \(gpu-01, gpu-02\)"):
        load_baseline(two)
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"results": [], "models": [to_plain(EIGHT) | {"image_size": 32}]}))
    assert check("ratio>=1 model=resnet50 gpus=8", baseline=load_baseline(small)) == [
        "FAIL ratio>=1 model=resnet50 gpus=8: gpu-01: resnet50 ×8 GPU bf16 batch 256: "
        "not in the baseline"
    ]  # fmt: skip


def test_a_recording_is_a_baseline_too_whatever_its_name(tmp_path) -> None:
    """Recordings are what is kept to compare machines weeks apart: one of a kernel run, even
    saved as .json, is a baseline of its cases, and its own results are at 1× of it."""
    recording = tmp_path / "monday.json"
    shutil.copyfile(ROOT / "tests" / "fixtures" / "cpu-kernels.dlrec", recording)
    kernels, models = results_in(recording)
    assert len(kernels) == 17 and not models
    baseline = load_baseline(recording)
    assert len(baseline) == len({(r.kind, r.shape, r.precision) for _, r in kernels})
    same = cases(kernels, models, baseline)
    assert failures([parse_assertion("ratio>=0.999 kind=gemm")], same) == []
    assert len(failures([parse_assertion("ratio>=1.001 kind=gemm")], same)) == sum(
        r.kind == "gemm" for _, r in kernels
    )


@pytest.mark.parametrize("rate", [float("nan"), 0.0, -650.0, float("inf")])
def test_a_baseline_rate_no_run_could_give_is_refused(tmp_path, rate) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"results": [to_plain(GEMM) | {"tflops": rate}], "models": []}))
    with pytest.raises(
        PlanError, match=r"/baseline.json: gemm 4096x4096x4096 NN's rate .* is not a"
    ):
        load_baseline(path)


def test_a_plan_file_takes_an_assert_table(tmp_path) -> None:
    path = tmp_path / "accept.toml"
    path.write_text('[kernels]\nset = "tiny"\nkinds = ["gemm"]\n\n[assert]\n'
                    'gemm = "tflops>=600 kind=gemm precision=bf16"\n')  # fmt: skip
    plan = load_plan_file(path)
    (assertion,) = plan.assertions
    assert assertion.label == "gemm (tflops>=600 kind=gemm precision=bf16)"
    path.write_text('[kernels]\nset = "tiny"\n[assert]\ngemm = "tflops>600x"\n')
    with pytest.raises(PlanError, match=r"\[assert\] gemm: 'tflops>600x' is not"):
        load_plan_file(path)
    path.write_text('[assert]\ngemm = "tflops>=1"\n')
    with pytest.raises(PlanError, match="has no"):
        load_plan_file(path)


def test_a_gpt_run_is_held_to_its_mfu_and_tokens_per_second():
    from dltui.plans.assertions import cases, failures, parse_assertion
    from dltui.protocol.bench_results import ModelResult

    run = ModelResult("gpt-1.3b", "torch", "cuda", "bf16", 8, 16, seq_len=2048,
                      tokens_per_s=4.0e5, mfu=0.46)  # fmt: skip
    found = cases([], [("h200", run)], None)
    lines = failures([parse_assertion("mfu>=0.6 model=gpt-1.3b")], found)
    assert len(lines) == 1 and "0.46" in lines[0]
    assert not failures([parse_assertion("tokens_per_s>=300000")], found)
