"""The launcher's built-in plans, and how a choice on its form becomes plans to run.

Free of Textual: the form's values go in, `dltui.protocol` plans and the way to run them come
out, checked by the same rules as `dltui bench` (a bad choice is a PlanError in words).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from dltui.client.campaign import check_layout, is_across, server_work
from dltui.formatting import describe_work
from dltui.plans import sizing
from dltui.plans.check import PlanError, check_plan
from dltui.plans.files import load_plans
from dltui.plans.names import COLLECTIVES, GPT_MODELS, WHITEPAPER_MODELS
from dltui.plans.placement import sweep_counts, sweep_sets
from dltui.plans.topology import gpu_names
from dltui.protocol.bench_plans import KernelPlan, ModelPlan, Plan
from dltui.protocol.inventory import Inventory


@dataclass(frozen=True, slots=True)
class Builtin:
    key: str
    title: str
    about: str
    """What it runs and roughly how long, for the launcher's list."""


SCALE_OUT_ABOUT = "ResNet-50 on all GPUs of every chosen server at once, after baselines"
BUILTINS = (
    Builtin("smoke", "Smoke test", "tiny GEMM, conv and RNN shapes: seconds, even on a CPU"),
    Builtin(
        "quick",
        "Quick kernels",
        "a tenth of DeepBench: 10 GEMMs, 10 convolutions (3 passes each), 10 RNNs (2 passes each)",
    ),
    Builtin("full", "DeepBench full", "160 GEMMs, 94 convs, 53 RNNs, bandwidth: an hour or more"),
    Builtin(
        "models",
        "CNN models",
        "ResNet-50, VGG-16, GoogLeNet, AlexNet trained on one GPU (or the CPU)",
    ),
    Builtin("scale_up", "Scale-up sweep", "ResNet-50 on 1, 2, 4 … all GPUs of one server"),
    Builtin("scale_out", "Scale-out", SCALE_OUT_ABOUT),
    Builtin(
        "transformers",
        "Transformers",
        "GPT 124M, 350M and 1.3B training on 1 GPU: tokens/s and MFU (a CPU: a tiny GPT)",
    ),
    Builtin(
        "attention",
        "Attention and collectives",
        "attention, every backend searched; all-gather, reduce-scatter, all-to-all, broadcast",
    ),
    Builtin("file", "Plan file", "a TOML file with [kernels] and [models] tables"),
)

AUTO = "auto"


@dataclass(frozen=True, slots=True)
class Choice:
    """What the launcher's form says."""

    plan: str
    framework: str = "torch"
    precision: str = AUTO
    device: str = AUTO
    plan_file: str = ""


@dataclass(frozen=True, slots=True)
class Launch:
    """Plans to run one after the other on the chosen servers, each side by side or across."""

    plans: list[tuple[Plan, bool]]
    description: str


def _kernel_precision(choice: Choice, inventories: list[Inventory]) -> str:
    if choice.precision != AUTO:
        return choice.precision
    on_cpu = choice.device == "cpu" or not all(inventory.gpus for inventory in inventories)
    return "fp32" if on_cpu else "bf16"


def make_launch(choice: Choice, inventories: list[Inventory]) -> Launch:
    """The plans this choice means for these servers; PlanError says what is wrong."""
    if not inventories:
        raise PlanError("choose at least one live server")
    if choice.plan == "file":
        return _from_file(choice, len(inventories))
    kernels = KernelPlan(framework=choice.framework, device=choice.device,
                         precisions=[_kernel_precision(choice, inventories)])  # fmt: skip
    precision = None if choice.precision == AUTO else choice.precision
    models = ModelPlan(framework=choice.framework, device=choice.device, precision=precision)
    if all(sizing.on_cpu(models, inventory) for inventory in inventories):
        models = sizing.for_cpu(models)
    plan: Plan
    across = False
    if choice.plan == "smoke":
        plan = replace(kernels, shape_set="tiny", iterations=20, max_seconds=0.5)
    elif choice.plan == "quick":
        plan = replace(kernels, shape_set="quick")
    elif choice.plan == "full":
        plan = replace(kernels, shape_set="full", kinds=["gemm", "conv", "rnn", "bandwidth"])
    elif choice.plan == "models":
        plan = replace(models, models=list(WHITEPAPER_MODELS))
    elif choice.plan == "transformers":
        on_cpu = all(sizing.on_cpu(models, inventory) for inventory in inventories)
        plan = replace(models, models=["gpt-tiny"] if on_cpu else list(GPT_MODELS[:3]))
    elif choice.plan == "attention":
        return _attention_launch(kernels, inventories)
    elif choice.plan == "scale_up":
        if len(inventories) != 1:
            raise PlanError("a scale-up sweep runs on one server: choose exactly one")
        plan = replace(models, gpus=sweep_counts(inventories[0]))
    elif choice.plan == "scale_out":
        plan, across = replace(models, gpus=[0]), True
    else:
        raise PlanError(f"unknown plan {choice.plan!r}")
    check_plan(plan)
    check_layout(plan, len(inventories), across)
    title = next(builtin.title for builtin in BUILTINS if builtin.key == choice.plan)
    if choice.plan == "scale_up" and inventories[0].gpus:  # the GPU sets the worker will use
        title += ": " + " · ".join(gpu_names(s.gpus) for s in sweep_sets(inventories[0]))
    return Launch([(plan, across)], title)


def _attention_launch(kernels: KernelPlan, inventories: list[Inventory]) -> Launch:
    """Attention on each server, then the collectives: across the servers where there are
    several (the rendezvous the engines meet at), else on this server's GPUs. CPUs get the
    tiny shapes: the quick set's 4 GB all-to-all and 16k-token attention are a GPU's."""
    servers = len(inventories)
    on_cpu = any(sizing.on_cpu(kernels, inventory) for inventory in inventories)
    shapes = replace(kernels, shape_set="tiny" if on_cpu else "quick")
    attention = replace(shapes, kinds=["attention"])
    collectives = replace(shapes, kinds=list(COLLECTIVES), precisions=["fp32"])
    across = is_across(collectives, servers)
    for plan, spread in ((attention, False), (collectives, across)):
        check_plan(plan)
        check_layout(plan, servers, spread)
    title = next(builtin.title for builtin in BUILTINS if builtin.key == "attention")
    return Launch([(attention, False), (collectives, across)], title)


def size_lines(launch: Launch, servers: dict[str, Inventory]) -> list[str]:
    """Per server: how many cases or runs the launch makes there and about how long."""
    inventories = list(servers.values())
    work = [server_work(plan, across, inventories) for plan, across in launch.plans]
    return [
        f"{name}: {describe_work([p for plans in work for p in plans[index]], inventory)}"
        for index, (name, inventory) in enumerate(servers.items())
    ]


def _from_file(choice: Choice, servers: int) -> Launch:
    text = choice.plan_file.strip()
    if not text:
        raise PlanError("name a plan file (TOML with [kernels] or [models])")
    path = Path(text).expanduser()
    plans = [(plan, is_across(plan, servers)) for plan in load_plans(path)]
    for plan, across in plans:
        check_layout(plan, servers, across)
    return Launch(plans, path.name)
