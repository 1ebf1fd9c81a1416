"""bench/training.sweep: the order a model plan's runs are made in."""

from __future__ import annotations

from dltui.bench.training import sweep
from dltui.protocol.bench_plans import ModelPlan


def test_one_gpu_runs_first_and_every_gpu_last_whatever_the_plans_order():
    """'--gpus 2,1' printed the two-GPU row before the one its efficiency is against: the
    table's column stayed blank while the JSON, made at the end, had it."""
    plan = ModelPlan(models=["resnet20", "alexnet"], gpus=[0, 2, 1])
    assert sweep(plan) == [("resnet20", 1), ("resnet20", 2), ("resnet20", 0),
                           ("alexnet", 1), ("alexnet", 2), ("alexnet", 0)]  # fmt: skip
