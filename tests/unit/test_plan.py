from __future__ import annotations

from dataclasses import replace

import pytest

from dltui.bench.plan import PlanError, check_plan
from dltui.protocol.messages import KernelPlan

GOOD = KernelPlan(framework="torch", shape_set="tiny", kinds=["gemm", "conv"], precisions=["bf16"])


def test_a_good_plan_passes_unchanged():
    assert check_plan(GOOD) is GOOD
    assert check_plan(KernelPlan()) == KernelPlan()  # the defaults are a valid plan


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"framework": "caffe"}, ["unknown framework 'caffe'", "torch, tensorflow"]),
        ({"shape_set": "huge"}, ["unknown shape set"]),
        ({"kinds": ["gemm", "rm -rf /"]}, ["unknown kernel 'rm -rf /'"]),
        ({"kinds": []}, ["no kernel kinds"]),
        ({"precisions": ["fp8"]}, ["unknown precision 'fp8'"]),
        ({"kinds": ["gemm", "gemm"]}, ["must not repeat"]),
        ({"device": "tpu"}, ["unknown device"]),
        ({"gpus": -1}, ["gpus must be"]),
        ({"iterations": 0}, ["at least 1"]),
        ({"warmup": 10**9}, ["warmup must be"]),
        ({"max_seconds": float("nan")}, ["max_seconds"]),
        ({"timeout_s": 0.0}, ["timeout_s"]),
    ],
)
def test_bad_plans_are_refused_with_every_reason(change, words):
    with pytest.raises(PlanError) as raised:
        check_plan(replace(GOOD, **change))
    for word in words:
        assert word in str(raised.value)


def test_all_problems_are_reported_at_once():
    with pytest.raises(PlanError) as raised:
        check_plan(replace(GOOD, framework="caffe", precisions=["fp8"], gpus=-3))
    assert str(raised.value).count(";") == 2


def test_plan_files(tmp_path):
    from dltui.bench.plan import load_plan

    good = tmp_path / "good.toml"
    good.write_text('[kernels]\nframework = "tensorflow"\nset = "tiny"\nprecisions = ["bf16"]\n')
    assert load_plan(good) == KernelPlan(framework="tensorflow", shape_set="tiny",
                                         precisions=["bf16"])  # fmt: skip
    cases = {
        "[kernels\n": "not valid TOML",
        "[models]\n": "no [kernels] table",
        '[kernels]\ncluster = {master_addr = "x"}\n': "unknown keys cluster",
        '[kernels]\niterations = "many"\n': "expected int",
        '[kernels]\nkinds = ["gemm", "fft"]\n': "unknown kernel 'fft'",
    }
    for text, words in cases.items():
        path = tmp_path / "plan.toml"
        path.write_text(text)
        with pytest.raises(PlanError) as raised:
            load_plan(path)
        assert words in str(raised.value)
    with pytest.raises(PlanError, match="cannot read"):
        load_plan(tmp_path / "missing.toml")
