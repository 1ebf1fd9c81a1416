"""What the predictor takes from measured results: link curves from all-reduce results and
workloads from one-GPU training results with a step profile."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from dltui.predict import links, workload
from dltui.predict.links import LinkCurve
from dltui.predict.workload import Workload
from dltui.protocol.bench_results import KernelResult, ModelResult


def engine(framework: str, device: str) -> str:
    """The collective engine a framework uses on a device, as a profile names it."""
    if device == "cuda":
        return "nccl"
    return "gloo" if framework == "torch" else "tensorflow"


@dataclass(frozen=True, slots=True)
class Measured:
    curves: dict[tuple[str, str], LinkCurve]
    """(engine, level) → the curve (between servers: the one measured across the most)."""
    across: dict[str, dict[int, LinkCurve]]
    """Engine → servers → the curve measured across that many servers."""
    workloads: dict[str, Workload]
    """Model → the workload of its latest one-GPU profile."""
    problems: list[str]
    """What could not be used, and why."""


def gather(
    kernels: Sequence[tuple[str, KernelResult]], models: Sequence[tuple[str, ModelResult]]
) -> Measured:
    """Curves and workloads from (server, result) pairs, the later result of a kind winning."""
    problems: list[str] = []
    groups: dict[tuple[str, str, str, int, int], list[tuple[float, float]]] = defaultdict(list)
    lost: dict[tuple[str, str, str, int, int], list[tuple[float, float]]] = defaultdict(list)
    for server, result in kernels:
        if result.kind != "allreduce" or result.error or result.median_s <= 0:
            continue
        ranks = int(result.params.get("ranks", 0))
        servers = int(result.params.get("servers", 1))
        floats = int(result.params.get("floats", 0))
        if ranks < 2 or floats <= 0:
            continue
        if 1 < servers < ranks:
            problems.append(
                f"{server}: an all-reduce of {ranks} ranks on {servers} servers mixes two link "
                "levels; a curve between servers needs one rank a server"
            )
            continue
        key = (engine(result.framework, result.device), server, result.device, servers, ranks)
        groups[key].append((floats * 4.0, result.median_s))
        if result.compute_lost_s is not None:
            lost[key].append((floats * 4.0, result.compute_lost_s))
    curves: dict[tuple[str, str], LinkCurve] = {}
    across: dict[str, dict[int, LinkCurve]] = defaultdict(dict)
    for key, points in sorted(groups.items(), key=lambda item: item[0][3]):
        name, server, device, servers, ranks = key
        level = links.INTER if servers > 1 else links.INTRA
        unit = "GPUs" if device == "cuda" else "processes"
        where = f"{servers} servers" if servers > 1 else f"{ranks} {unit} of {server}"
        source = f"measured: {name} all-reduce, {where}, {len(points)} sizes"
        if lost[key]:
            source += f" (compute lost beside it: {len(lost[key])} sizes)"
        try:
            curve = links.fit(level, ranks, points, source, lost[key])
        except ValueError as exc:
            problems.append(f"{server}: {exc}")
            continue
        curves[(name, level)] = curve
        if level == links.INTER:
            across[name][servers] = curve
    workloads: dict[str, Workload] = {}
    for server, model in models:
        if model.profile is None or model.error or model.gpus != 1 or model.servers != 1:
            continue
        try:
            workloads[model.model] = workload.from_result(model, server)
        except ValueError as exc:
            problems.append(str(exc))
    return Measured(curves, dict(across), workloads, problems)
