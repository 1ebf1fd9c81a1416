"""Plan files: TOML with a [kernels] table, a [models] table, or both, run in the order
written, and an [assert] table of pass/fail checks on their results (plans/assertions.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from dltui.plans.assertions import Assertion, AssertionSyntaxError, parse_table
from dltui.plans.check import PlanError, check_plan
from dltui.protocol.bench_plans import KernelPlan, ModelPlan, Plan
from dltui.protocol.errors import ProtocolError
from dltui.protocol.validate import build
from dltui.userfiles import FileProblem, listing, load_toml

MAX_PLAN_BYTES = 64 << 10
"""A plan is a few lines; a bigger file is refused before it is parsed."""

TABLES: dict[str, type[KernelPlan] | type[ModelPlan]] = {"kernels": KernelPlan, "models": ModelPlan}


@dataclass
class PlanFile:
    plans: list[Plan]
    assertions: list[Assertion] = field(default_factory=list)


def load_plans(path: str | os.PathLike[str]) -> list[Plan]:
    """The plans of a plan file (load_plan_file), for callers that run them only."""
    return load_plan_file(path).plans


def load_plan_file(path: str | os.PathLike[str]) -> PlanFile:
    """The plans of a TOML file's [kernels] and [models] tables, in the file's order, and its
    [assert] checks; PlanError says what is wrong with it.

    [kernels]
    framework = "torch"
    set = "quick"
    kinds = ["gemm", "conv"]
    precisions = ["bf16"]

    [models]
    models = ["resnet50", "vgg16"]
    gpus = [1, 2, 4, 8]

    [assert]
    gemm = "tflops>=600 kind=gemm precision=bf16"
    resnet = "images_per_second>=7000 model=resnet50"
    """
    try:
        document = load_toml(path, "plan", MAX_PLAN_BYTES)
    except FileProblem as exc:
        raise PlanError(str(exc)) from None
    strays = sorted(set(document) - set(TABLES) - {"assert"})
    if strays:
        raise PlanError(f"plan {path}: unknown tables {listing(strays)} "
                        "(use [kernels], [models], [assert])")  # fmt: skip
    plans = [_plan_from_table(path, name, table) for name, table in document.items()
             if name != "assert"]  # fmt: skip
    if not plans:
        raise PlanError(f"plan {path} has no [kernels] or [models] table")
    try:
        assertions = parse_table(document.get("assert", {}))
    except AssertionSyntaxError as exc:
        raise PlanError(f"plan {path}: {exc}") from None
    return PlanFile(plans, assertions)


def _plan_from_table(path: str | os.PathLike[str], name: str, table: object) -> Plan:
    if not isinstance(table, dict):
        raise PlanError(f"plan {path}: {name} must be a table")
    cls = TABLES[name]
    # The client assigns a cluster role; a plan file names only what to run.
    renames: dict[str, str] = {"set": "shape_set"} if cls is KernelPlan else {}
    allowed = {key for key in cls.__dataclass_fields__ if key != "cluster"}
    keys: list[str] = list(table)  # a TOML table's keys are strings
    unknown = sorted({renames.get(key, key) for key in keys} - allowed)
    if unknown:
        raise PlanError(f"plan {path} [{name}]: unknown keys {listing(unknown)}")
    both = [key for key, field in renames.items() if key in table and field in table]
    if both:  # one would win silently (the last written): perhaps the costly one
        raise PlanError(f"plan {path} [{name}]: {both[0]} and {renames[both[0]]} are one key")
    fields = {renames.get(key, key): value for key, value in table.items()}
    try:
        plan = build(cls, fields, name)
    except ProtocolError as exc:
        raise PlanError(f"plan {path}: {exc}") from None
    try:
        return check_plan(plan)
    except PlanError as exc:  # said of the table, where a file has several with these keys
        raise PlanError(f"plan {path} [{name}]: {exc}") from None
