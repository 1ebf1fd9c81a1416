"""bench/training: the order a model plan's runs are made in, and what each run is called."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dltui.bench.training import TrainJob, label, sweep
from dltui.plans.names import NVML_GPUS_ENV
from dltui.protocol.bench_plans import ModelPlan


def test_one_gpu_runs_first_and_every_gpu_last_whatever_the_plans_order():
    """'--gpus 2,1' printed the two-GPU row before the one its efficiency is against: the
    table's column stayed blank while the JSON, made at the end, had it."""
    plan = ModelPlan(models=["resnet20", "alexnet"], gpus=[0, 2, 1])
    assert sweep(plan) == [("resnet20", 1), ("resnet20", 2), ("resnet20", 0),
                           ("alexnet", 1), ("alexnet", 2), ("alexnet", 0)]  # fmt: skip


@pytest.mark.parametrize(
    ("device", "nvml_gpus", "unit"),
    [("auto", "0", "proc"), ("auto", "8", "GPU"), ("cpu", "8", "proc"), ("cuda", "8", "GPU")],
)  # fmt: skip
def test_a_run_on_auto_is_named_for_where_it_runs(device, nvml_gpus, unit, monkeypatch):
    """A CPU-only server's 'CNN models' from the launcher (device auto) said 'resnet50 torch
    on 1 GPU' while its one process trained on the CPU."""
    monkeypatch.setenv(NVML_GPUS_ENV, nvml_gpus)
    job = TrainJob("torch", "resnet50", device, 1, 1, None, None, None, None, 1, 3, 224, 1000,
                   0.1, None, None, 0.2, 1, 60.0)  # fmt: skip
    assert label(job) == f"resnet50 torch on 1 {unit}"
    across = replace(job, replicas=2, servers=2)
    assert label(across) == f"resnet50 torch on 2 {unit}s over 2 servers"
