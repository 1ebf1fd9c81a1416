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
