"""How big a run is before it starts: the counts match what the engine runs, a CPU gets its
own step counts, and the words say it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dltui.bench.shapes import cases
from dltui.bench.suite import DIRECTIONS
from dltui.client.campaign import server_work
from dltui.formatting import describe_work, estimated_duration
from dltui.plans import sizing
from dltui.plans.names import COLLECTIVES, KINDS, SHAPE_SETS
from dltui.protocol.bench_plans import KernelPlan, ModelPlan
from dltui.protocol.inventory import GpuInfo, Inventory


def box(gpus: int) -> Inventory:
    info = [GpuInfo(i, "NVIDIA H200", f"GPU-{i}", 141 << 30) for i in range(gpus)]
    return Inventory("box", "Linux", "Xeon", 2, 24 << 30, info)


@pytest.mark.parametrize("shape_set", SHAPE_SETS)
@pytest.mark.parametrize("gpus", [0, 1, 8])
def test_the_counts_are_what_the_engine_runs(shape_set: str, gpus: int) -> None:
    for kind in KINDS:
        plan = KernelPlan(shape_set=shape_set, kinds=[kind], precisions=["fp32", "bf16"])
        if kind == "bandwidth":
            expected = len(cases(shape_set, kind, gpus))
        elif kind in COLLECTIVES:
            expected = len(cases(shape_set, kind))
        else:
            expected = len(cases(shape_set, kind)) * len(DIRECTIONS[kind]) * 2
        assert sizing.kernel_cases(plan, box(gpus)) == expected, (shape_set, kind, gpus)


def test_the_quick_set_is_sixty_passes_not_thirty_cases() -> None:
    plan = KernelPlan(shape_set="quick", kinds=["gemm", "conv", "rnn"])
    assert sizing.kernel_cases(plan, box(1)) == 10 + 10 * 3 + 10 * 2


def test_a_cpu_gets_its_own_step_counts_unless_asked() -> None:
    plan = ModelPlan(models=["alexnet"])
    assert (sizing.for_cpu(plan).warmup, sizing.for_cpu(plan).steps) == (2, 10)
    asked = ModelPlan(models=["alexnet"], warmup=1, steps=3)
    assert sizing.for_cpu(asked, warmup_given=True, steps_given=True) == asked
    assert sizing.on_cpu(plan, box(0)) and not sizing.on_cpu(plan, box(1))


def test_sizes_in_words() -> None:
    quick = KernelPlan(shape_set="quick", kinds=["gemm", "conv", "rnn"])
    assert describe_work([quick], box(1)).startswith("60 cases, about ")
    assert describe_work([quick], box(0)).endswith(" h")  # DeepBench's shapes on 2 cores
    runs = ModelPlan(models=["resnet50", "vgg16"], gpus=[1, 2])
    assert describe_work([runs], box(2)).startswith("4 training runs, about ")
    assert [estimated_duration(s) for s in (3, 40, 600, 9000)] == [
        "about 10 s", "about 40 s", "about 10 min", "about 2.5 h"
    ]  # fmt: skip


def test_a_run_across_servers_counts_the_baseline_the_first_server_runs_before_it() -> None:
    plan = ModelPlan(models=["resnet50"], gpus=[0])  # every GPU of each server
    first, second = server_work(plan, True, [box(8), box(8)])
    assert [p.gpus for p in first] == [[1, 8], [0]] and [p.gpus for p in second] == [[0]]
    assert describe_work(first, box(8)).startswith("3 training runs, about ")
    assert describe_work(second, box(8)).startswith("1 training run, about ")
    assert server_work(plan, True, [box(8), box(8)], baselines=False) == [[plan], [plan]]
    assert server_work(plan, False, [box(8), box(8)]) == [[plan], [plan]]
    one = ModelPlan(models=["resnet50"], gpus=[1])  # one GPU is the whole server's share
    assert [p.gpus for p in server_work(one, True, [box(8), box(8)])[0]] == [[1], [1]]


def test_kernels_and_training_runs_in_one_launch_are_said_together() -> None:
    plans = [KernelPlan(shape_set="quick", kinds=["gemm"]), ModelPlan(models=["alexnet"])]
    assert describe_work(plans, box(1)).startswith("10 cases + 1 training run, about ")


def test_a_one_replica_torch_run_counts_the_steps_its_profile_takes() -> None:
    """torch profiles a CNN on one replica; TensorFlow, a run of two and a GPT model do not."""
    alexnet = sizing.for_cpu(ModelPlan(models=["alexnet"], batch=32))
    torch_s = sizing.estimate_s(alexnet, box(0))
    tensorflow_s = sizing.estimate_s(replace(alexnet, framework="tensorflow"), box(0))
    step_s = 3 * 0.72e9 * 32 / sizing.TRAIN_RATE["cpu"]  # 2 cores: the reference's
    assert torch_s - tensorflow_s == pytest.approx(sizing.PROFILE_EXTRA_STEPS * step_s)
    two = replace(alexnet, gpus=[2])
    assert sizing.estimate_s(two, box(0)) == sizing.estimate_s(
        replace(two, framework="tensorflow"), box(0)
    )
    gpt = sizing.for_cpu(ModelPlan(models=["gpt-tiny"]))
    assert sizing.estimate_s(gpt, box(0)) == sizing.estimate_s(
        replace(gpt, framework="tensorflow"), box(0)
    )
