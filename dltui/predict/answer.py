"""From whatever the user has — measured results, a described server, or both — to one
what-if table: which workload, which links, which layouts."""

from __future__ import annotations

from collections.abc import Sequence

from dltui.predict import measured as measured_inputs
from dltui.predict.described import Model, Server
from dltui.predict.links import INTER, INTRA
from dltui.predict.model import Fabric, Layout, parse_layout
from dltui.predict.whatif import DEFAULT_LAYOUTS, WhatIf, what_if
from dltui.protocol.bench_results import KernelResult, ModelResult


class NothingToPredict(ValueError):
    """The inputs do not make a workload: the message says what to add."""


def answer(
    kernels: Sequence[tuple[str, KernelResult]],
    models: Sequence[tuple[str, ModelResult]],
    model_name: str | None = None,
    server: Server | None = None,
    model: Model | None = None,
    layouts: Sequence[Layout] | None = None,
    target: float | None = None,
) -> WhatIf:
    """Measured curves and profiles, a described server's links in place of measured ones
    where it gives them, a described model in place of a profile where it is given."""
    found = measured_inputs.gather(kernels, models)
    name = model.name if model is not None else model_name
    profiles = found.workloads
    if name is None and model is None:
        if len(profiles) > 1:
            raise NothingToPredict(
                f"results profile {len(profiles)} models "
                f"({', '.join(sorted(profiles))}): choose one with --model"
            )
        name = next(iter(profiles), None)
    profiled = profiles.get(name) if name is not None else None
    if model is not None:
        workload = model.workload(profiled)
    elif profiled is not None:
        workload = profiled
    elif name is not None:
        raise NothingToPredict(
            f"no one-GPU result of {name} with a step profile: run `dltui "
            f"bench models --model {name} --gpus 1`, or describe the model"
            + _not_used(found.problems)
        )
    else:
        raise NothingToPredict(
            "nothing to predict from: give results with a step profile "
            "(dltui bench models --gpus 1 --json) or describe a model" + _not_used(found.problems)
        )
    engine = _engine_of(models, name)
    intra = found.curves.get((engine, INTRA))
    inter = found.curves.get((engine, INTER))
    inter_measured = found.across.get(engine, {})
    if server is not None:
        intra = server.fabric.intra or intra
        if server.fabric.inter is not None:  # a described network stands for every ring
            inter, inter_measured = server.fabric.inter, {}
    if layouts is None:
        layouts = _default_layouts(server)
    measured_rates = {
        (result.servers, result.gpus // result.servers): result.images_per_s
        for _, result in models
        if result.model == workload.model and result.batch == workload.batch
        and result.images_per_s and result.error is None and result.servers
        and _engine(result) == engine
    }  # fmt: skip
    fabric = Fabric(intra, inter, inter_measured)
    return what_if(workload, fabric, layouts, target, measured_rates, found.problems)


def _not_used(problems: Sequence[str]) -> str:
    return "".join(f"; not used: {problem}" for problem in problems)


def _engine(result: ModelResult) -> str:
    return measured_inputs.engine(result.framework, result.device)


def _engine_of(models: Sequence[tuple[str, ModelResult]], name: str | None) -> str:
    """The collective engine of the profiled run (its curves apply), else NCCL (GPUs)."""
    for _, result in reversed(models):
        if result.model == name and result.profile is not None and result.gpus == 1:
            return _engine(result)
    return "nccl"


def _default_layouts(server: Server | None) -> list[Layout]:
    if server is None or server.gpus == 1:
        return [parse_layout(text) for text in DEFAULT_LAYOUTS]
    gpus = server.gpus
    return [Layout(1, 1), Layout(1, gpus)] + [Layout(s, gpus) for s in (2, 4, 8, 16, 64)]
