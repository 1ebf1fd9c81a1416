"""The launcher's transformer plans: what each becomes on GPU servers and on CPUs."""

from __future__ import annotations

from dltui.plans.names import COLLECTIVES
from dltui.protocol.bench_plans import KernelPlan, ModelPlan
from dltui.protocol.inventory import GpuInfo, Inventory
from dltui.tui.launch_plans import Choice, make_launch


def server(gpus: int) -> Inventory:
    info = [GpuInfo(i, "NVIDIA H200", f"GPU-{i}", 141 << 30) for i in range(gpus)]
    return Inventory("box", "Linux", "Xeon", 16, 64 << 30, info)


def test_transformers_train_the_three_gpts_on_a_gpu_and_the_tiny_one_on_a_cpu():
    ((plan, across),) = make_launch(Choice("transformers"), [server(8)]).plans
    assert isinstance(plan, ModelPlan) and not across
    assert (plan.models, plan.gpus) == (["gpt-124m", "gpt-350m", "gpt-1.3b"], [1])
    ((cpu_plan, _),) = make_launch(Choice("transformers"), [server(0)]).plans
    assert isinstance(cpu_plan, ModelPlan) and cpu_plan.models == ["gpt-tiny"]
    assert cpu_plan.steps == 10  # a CPU's step count


def test_attention_then_the_collectives_across_servers():
    launch = make_launch(Choice("attention"), [server(8), server(8)])
    (attention, side_by_side), (collectives, across) = launch.plans
    assert isinstance(attention, KernelPlan) and isinstance(collectives, KernelPlan)
    assert (attention.kinds, attention.shape_set, attention.precisions) == (
        ["attention"], "quick", ["bf16"],
    )  # fmt: skip
    assert not side_by_side and across and collectives.kinds == list(COLLECTIVES)
    (_, _), (cpu_collectives, alone) = make_launch(Choice("attention"), [server(0)]).plans
    assert cpu_collectives.shape_set == "tiny" and not alone
