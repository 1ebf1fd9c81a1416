"""The names a plan may use, and the check that refuses a bad plan before anything runs."""

from __future__ import annotations

import math
import os
import re
import tomllib

from dltui.protocol.errors import ProtocolError
from dltui.protocol.messages import KernelPlan
from dltui.protocol.validate import build

FRAMEWORKS = ("torch", "tensorflow")
SHAPE_SETS = ("tiny", "quick", "full")
KINDS = ("gemm", "conv", "rnn", "bandwidth", "allreduce")
PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "mixed")
"""mixed: 16-bit inputs and multiplies, 32-bit accumulation, as DeepBench means it."""
DEVICES = ("auto", "cuda", "cpu")

MAX_GPUS = 1024
_HOST = re.compile(r"[A-Za-z0-9.:_-]{1,253}")  # a name or an address; nothing a shell would read
MAX_ITERATIONS = 100_000
MAX_SECONDS = 600.0
MAX_TIMEOUT = 7 * 24 * 3600.0


class PlanError(ValueError):
    """A plan that names something unknown or asks for something absurd."""


def check_plan(plan: KernelPlan) -> KernelPlan:
    """Return the plan if every name is known and every number in range; else PlanError."""
    problems = []

    def one_of(what: str, value: str, allowed: tuple[str, ...]) -> None:
        if value not in allowed:
            problems.append(f"unknown {what} {value!r} (one of: {', '.join(allowed)})")

    one_of("framework", plan.framework, FRAMEWORKS)
    one_of("shape set", plan.shape_set, SHAPE_SETS)
    one_of("device", plan.device, DEVICES)
    if not plan.kinds:
        problems.append("no kernel kinds")
    for kind in plan.kinds:
        one_of("kernel", kind, KINDS)
    if not plan.precisions:
        problems.append("no precisions")
    for precision in plan.precisions:
        one_of("precision", precision, PRECISIONS)
    if len(set(plan.kinds)) != len(plan.kinds) or len(set(plan.precisions)) != len(plan.precisions):
        problems.append("kinds and precisions must not repeat")
    if not 0 <= plan.gpus <= MAX_GPUS:
        problems.append(f"gpus must be 0-{MAX_GPUS}, got {plan.gpus}")
    for name, value in (("warmup", plan.warmup), ("iterations", plan.iterations)):
        if value is not None and not 0 <= value <= MAX_ITERATIONS:
            problems.append(f"{name} must be 0-{MAX_ITERATIONS}, got {value}")
    if plan.iterations == 0:
        problems.append("iterations must be at least 1")
    for name, value, top in (
        ("max_seconds", plan.max_seconds, MAX_SECONDS),
        ("timeout_s", plan.timeout_s, MAX_TIMEOUT),
    ):
        if not (math.isfinite(value) and 0 < value <= top):
            problems.append(f"{name} must be in (0, {top:g}], got {value}")
    if plan.cluster is not None:
        problems += _cluster_problems(plan)
    if problems:
        raise PlanError("; ".join(problems))
    return plan


def _cluster_problems(plan: KernelPlan) -> list[str]:
    role = plan.cluster
    assert role is not None
    problems = []
    if plan.kinds != ["allreduce"]:
        problems.append("only all-reduce runs across servers; run the other kinds per server")
    if plan.framework == "tensorflow" and len(role.peers) != role.world:
        problems.append(
            f"a TensorFlow run across servers needs every worker's address ({role.world}), "
            f"got {len(role.peers)}"
        )
    for peer in role.peers:
        host, _, port = peer.rpartition(":")
        if not (_HOST.fullmatch(host) and port.isdigit() and 0 < int(port) < 65536):
            problems.append(f"worker address {peer!r} is not HOST:PORT")
    if not _HOST.fullmatch(role.master_addr):
        problems.append(f"rendezvous host {role.master_addr!r} is not a host name or address")
    if not 0 < role.master_port < 65536:
        problems.append(f"rendezvous port must be 1-65535, got {role.master_port}")
    if not 0 < role.world <= MAX_GPUS:
        problems.append(f"world size must be 1-{MAX_GPUS}, got {role.world}")
    if not (role.rank_offset >= 0 and 0 < role.local_ranks <= role.world - role.rank_offset):
        problems.append(
            f"ranks {role.rank_offset}..{role.rank_offset + role.local_ranks - 1} "
            f"do not fit a world of {role.world}"
        )
    if plan.gpus not in (0, role.local_ranks):
        problems.append(f"gpus ({plan.gpus}) and the local ranks ({role.local_ranks}) differ")
    return problems


def load_plan(path: str | os.PathLike[str]) -> KernelPlan:
    """A plan from a TOML file's [kernels] table; PlanError says what is wrong with it.

    [kernels]
    framework = "torch"
    set = "quick"
    kinds = ["gemm", "conv"]
    precisions = ["bf16"]
    max_seconds = 0.5
    """
    try:
        with open(path, "rb") as file:
            document = tomllib.load(file)
    except OSError as exc:
        raise PlanError(f"cannot read plan {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"plan {path} is not valid TOML: {exc}") from exc
    table = document.get("kernels")
    if not isinstance(table, dict):
        raise PlanError(f"plan {path} has no [kernels] table")
    # The client assigns a cluster role; a plan file names only what to run.
    allowed = {"set" if name == "shape_set" else name for name in KernelPlan.__dataclass_fields__}
    unknown = sorted(set(table) - (allowed - {"cluster"}))
    if unknown:
        raise PlanError(f"plan {path}: unknown keys {', '.join(unknown)}")
    if "set" in table:
        table["shape_set"] = table.pop("set")
    try:
        plan = build(KernelPlan, table, "kernels")
    except ProtocolError as exc:
        raise PlanError(f"plan {path}: {exc}") from exc
    return check_plan(plan)
