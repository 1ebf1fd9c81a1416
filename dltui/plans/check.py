"""The check that refuses a bad plan before anything runs: unknown names, absurd numbers,
a cluster role that does not add up."""

from __future__ import annotations

import math
import os

from dltui.errors import UsageError
from dltui.plans.gpt import is_gpt
from dltui.plans.names import (
    COLLECTIVES,
    DEVICES,
    FILLS,
    FRAMEWORKS,
    KINDS,
    MAX_BATCH,
    MAX_CLASSES,
    MAX_GPUS,
    MAX_IMAGE,
    MAX_ITERATIONS,
    MAX_SECONDS,
    MAX_SEQ,
    MAX_STEPS,
    MAX_TIMEOUT,
    MIN_IMAGE,
    MODEL_PRECISIONS,
    MODELS,
    PARALLELISMS,
    PRECISIONS,
    SHAPE_SETS,
    TUNINGS,
)
from dltui.plans.occupancy import mig_uuid
from dltui.protocol.address import is_host
from dltui.protocol.bench_plans import KernelPlan, ModelPlan, Plan
from dltui.protocol.errors import quote

MAX_PROBLEMS = 6


class PlanError(UsageError):
    """A plan that names something unknown or asks for something absurd."""


def check_plan(plan: Plan) -> Plan:
    """Return the plan if every name is known and every number in range; else PlanError."""
    problems = _model_problems(plan) if isinstance(plan, ModelPlan) else _kernel_problems(plan)
    if plan.cluster is not None:
        problems += _cluster_problems(plan)
    if problems:  # a few, then how many more: 5,000 bad names make no 5,000-part line
        more = len(problems) - MAX_PROBLEMS
        tail = f"; and {more:,} more" if more > 0 else ""
        raise PlanError("; ".join(problems[:MAX_PROBLEMS]) + tail)
    return plan


def _unknown(what: str, values: list[str], allowed: tuple[str, ...]) -> list[str]:
    """One problem naming the `values` that are not one of `allowed` (a few, then how many
    more), and the choices once: ten kinds make a long list to repeat per name."""
    bad = [quote(value) for value in values if value not in allowed]
    if not bad:
        return []
    more = len(bad) - MAX_PROBLEMS
    named = ", ".join(bad[:MAX_PROBLEMS]) + (f" and {more:,} more" if more > 0 else "")
    return [f"unknown {what} {named} (one of: {', '.join(allowed)})"]


def _device_problems(device: str) -> list[str]:
    if device in DEVICES or mig_uuid(device):
        return []
    return [f"unknown device {quote(device)} (one of: {', '.join(DEVICES)}, or cuda:MIG-<uuid>)"]


def _kernel_problems(plan: KernelPlan) -> list[str]:
    problems = [
        *_unknown("framework", [plan.framework], FRAMEWORKS),
        *_unknown("shape set", [plan.shape_set], SHAPE_SETS),
        *_device_problems(plan.device),
        *_unknown("kernel", plan.kinds, KINDS),
        *_unknown("precision", plan.precisions, PRECISIONS),
        *_unknown("tuning", [plan.tuning], TUNINGS),
        *_unknown("fill", [plan.fill], FILLS),
    ]
    if not plan.kinds:
        problems.append("no kernel kinds")
    if not plan.precisions:
        problems.append("no precisions")
    if len(set(plan.kinds)) != len(plan.kinds) or len(set(plan.precisions)) != len(plan.precisions):
        problems.append("kinds and precisions must not repeat")
    if not 0 <= plan.gpus <= MAX_GPUS:
        problems.append(f"gpus must be 0-{MAX_GPUS}, got {plan.gpus}")
    for name, count, least in (("warmup", plan.warmup, 0), ("iterations", plan.iterations, 1)):
        if count is not None and not least <= count <= MAX_ITERATIONS:
            problems.append(f"{name} must be {least}-{MAX_ITERATIONS}, got {count}")
    for name, value, top in (
        ("max_seconds", plan.max_seconds, MAX_SECONDS),
        ("timeout_s", plan.timeout_s, MAX_TIMEOUT),
    ):
        if not (math.isfinite(value) and 0 < value <= top):
            problems.append(f"{name} must be in (0, {top:g}], got {value}")
    collectives = [kind for kind in plan.kinds if kind in COLLECTIVES]
    if plan.cluster is not None and collectives != plan.kinds:
        problems.append("only the collectives run across servers; run the other kinds per server")
    if mig_uuid(plan.device) and collectives:
        problems.append("the collectives need whole GPUs, not one MIG instance")
    if plan.framework == "tensorflow" and set(collectives) - {"allreduce"}:
        problems.append("TensorFlow times all-reduce only; the other collectives run in torch")
    return problems


def _model_problems(plan: ModelPlan) -> list[str]:
    problems = [
        *_unknown("framework", [plan.framework], FRAMEWORKS),
        *_device_problems(plan.device),
        *_unknown("precision", [plan.precision] if plan.precision else [], MODEL_PRECISIONS),
        *_unknown("model", plan.models, MODELS),
    ]

    def within(what: str, value: float | None, low: float, high: float) -> None:
        if value is not None and not (math.isfinite(value) and low <= value <= high):
            problems.append(f"{what} must be {low:g}-{high:g}, got {value}")

    if not plan.models:
        problems.append("no models")
    if not plan.gpus:
        problems.append("no GPU counts")
    if len(set(plan.models)) != len(plan.models) or len(set(plan.gpus)) != len(plan.gpus):
        problems.append("models and GPU counts must not repeat")
    for count in plan.gpus:
        within("a GPU count", count, 0, MAX_GPUS)
    within("batch", plan.batch, 1, MAX_BATCH)
    within("warmup", plan.warmup, 0, MAX_STEPS)
    within("steps", plan.steps, 1, MAX_STEPS)
    within("image_size", plan.image_size, 16, MAX_IMAGE)
    for model in plan.models:
        if plan.image_size < MIN_IMAGE.get(model, 0):
            problems.append(f"{model} needs images of at least {MIN_IMAGE[model]} pixels, "
                            f"got {plan.image_size}")  # fmt: skip
    within("seq_len", plan.seq_len, 8, MAX_SEQ)
    problems += _unknown("parallelism", [plan.parallel], PARALLELISMS)
    if plan.parallel == "fsdp" and plan.framework != "torch":
        problems.append("FSDP runs in torch; TensorFlow's runs are data-parallel")
    if plan.data_dir is not None and any(is_gpt(model) for model in plan.models):
        problems.append("the GPT models train on synthetic tokens, not a folder of images")
    within("classes", plan.classes, 2, MAX_CLASSES)
    within("learning_rate", plan.learning_rate, 1e-6, 10.0)
    within("holdout", plan.holdout, 0.01, 0.9)
    within("max_epochs", plan.max_epochs, 1, 10_000)
    if not (math.isfinite(plan.timeout_s) and 0 < plan.timeout_s <= MAX_TIMEOUT):
        problems.append(f"timeout_s must be in (0, {MAX_TIMEOUT:g}], got {plan.timeout_s}")
    if (plan.data_dir is None) != (plan.target_accuracy is None):
        problems.append("a time-to-accuracy run needs both data_dir and target_accuracy")
    folder = plan.data_dir
    if folder is not None and not (os.path.isabs(folder) and "\0" not in folder):
        problems.append(f"data_dir must be an absolute path on the agent, got {quote(folder)}")
    within("target_accuracy", plan.target_accuracy, 0.01, 1.0)
    if plan.cluster is not None and len(plan.gpus) != 1:
        problems.append("a run across servers has one GPU count per server, not a sweep")
    if mig_uuid(plan.device) and (plan.gpus != [1] or plan.cluster is not None):
        problems.append("a run on one MIG instance has one GPU (gpus = [1]) on one server")
    return problems


def _cluster_problems(plan: Plan) -> list[str]:
    role = plan.cluster
    assert role is not None
    problems = []
    if plan.framework == "tensorflow" and len(role.peers) != role.world:
        problems.append(
            f"a TensorFlow run across servers needs every worker's address ({role.world}), "
            f"got {len(role.peers)}"
        )
    for peer in role.peers:
        host, _, port = peer.rpartition(":")
        if not (is_host(host) and port.isdigit() and 0 < int(port) < 65536):
            problems.append(f"worker address {quote(peer)} is not HOST:PORT")
    if not is_host(role.master_addr):
        problems.append(f"rendezvous host {quote(role.master_addr)} is not a host name or address")
    if not 0 < role.master_port < 65536:
        problems.append(f"rendezvous port must be 1-65535, got {role.master_port}")
    if not 0 < role.world <= MAX_GPUS:
        problems.append(f"world size must be 1-{MAX_GPUS}, got {role.world}")
    if not (role.rank_offset >= 0 and 0 < role.local_ranks <= role.world - role.rank_offset):
        problems.append(
            f"ranks {role.rank_offset}..{role.rank_offset + role.local_ranks - 1} "
            f"do not fit a world of {role.world}"
        )
    gpus = plan.gpus[0] if isinstance(plan, ModelPlan) and plan.gpus else plan.gpus
    # A TensorFlow worker is one rank however many GPUs it drives.
    if plan.framework == "torch" and gpus not in (0, role.local_ranks):
        problems.append(f"gpus ({gpus}) and the local ranks ({role.local_ranks}) differ")
    return problems
