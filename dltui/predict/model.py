"""The composition: one training step of data-parallel training on S servers × G GPUs.

Each GPU computes its step as it does alone (weak scaling: the batch per GPU stays). DDP and
Horovod all-reduce a bucket as soon as backward has made its gradients, one bucket after
another on one communication stream, so a bucket starts at max(ready, previous bucket done);
the optimizer runs once the last bucket is done. An all-reduce over several servers is
hierarchical: reduce-scatter inside each server, an all-reduce of each GPU's shard across the
servers (the G shards share the server's network link), all-gather inside; on one server, or
one GPU a server, a ring over the one link level.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from dltui.predict.links import LinkCurve
from dltui.predict.workload import AFTER_BACKWARD, Workload, buckets

MAX_GPUS = 1_000_000


@dataclass(frozen=True, slots=True)
class Layout:
    servers: int
    gpus: int
    """GPUs per server."""

    @property
    def total(self) -> int:
        return self.servers * self.gpus

    def __str__(self) -> str:
        return f"{self.servers}×{self.gpus}"


def parse_layout(text: str) -> Layout:
    """ "2x4" (or 2×4): servers × GPUs each."""
    parts = text.lower().replace("×", "x").split("x")
    digits = [part.strip() for part in parts]
    if len(parts) != 2 or not all(part.isascii() and part.isdigit() for part in digits):
        raise ValueError(f"a layout is SERVERSxGPUS, e.g. 2x4: not {text!r}")
    servers, gpus = (int(part) for part in digits)
    if servers < 1 or gpus < 1:
        raise ValueError(f"a layout needs at least one server of one GPU: not {text!r}")
    if servers * gpus > MAX_GPUS:
        raise ValueError(f"a layout of at most {MAX_GPUS:,} GPUs: not {text!r}")
    return Layout(servers, gpus)


@dataclass(frozen=True, slots=True)
class Fabric:
    """The links a layout's all-reduces cross."""

    intra: LinkCurve | None
    inter: LinkCurve | None
    inter_measured: Mapping[int, LinkCurve] = field(default_factory=dict)
    """Curves between servers measured across that many servers. A ring's step is not the
    same on every ring (a switch's ports, each host's stack): a layout takes the curve
    measured across the most servers up to its own, scaled from there by the ring model."""

    def across(self, servers: int) -> LinkCurve | None:
        """The curve between servers for a ring of `servers`."""
        fitting = [n for n in self.inter_measured if n <= servers]
        return self.inter_measured[max(fitting)] if fitting else self.inter


@dataclass(frozen=True, slots=True)
class Prediction:
    layout: Layout
    step_s: float
    images_per_s: float
    efficiency_vs_gpu: float
    """Images/s ÷ (GPUs × one GPU's images/s)."""
    communication_s: float
    """All-reduce time in the step, overlapped or not."""
    waiting_s: float
    """What communication adds to the step: the part backward did not hide."""
    missing: str | None = None
    """Why there is no prediction (a link level not measured or described)."""

    @property
    def waiting_share(self) -> float:
        return self.waiting_s / self.step_s if self.step_s else 0.0


def allreduce_s(nbytes: float, layout: Layout, fabric: Fabric) -> float:
    """One all-reduce of `nbytes` on every GPU of the layout."""
    servers, gpus = layout.servers, layout.gpus
    if layout.total == 1:
        return 0.0
    intra = fabric.intra
    if servers == 1:
        return _need(intra, "inside a server").ring(gpus, nbytes)
    across = _need(fabric.across(servers), "between servers")
    if gpus == 1:
        return across.ring(servers, nbytes)
    inside = _need(intra, "inside a server")
    # Each GPU's shard crosses the network at once with its G−1 neighbours' through the same
    # link: G rings of nbytes/G at busbw/G each, as long as one ring of nbytes.
    return (
        inside.half_ring(gpus, nbytes)
        + across.ring(servers, nbytes)
        + inside.half_ring(gpus, nbytes)
    )


def compute_lost_s(nbytes: float, layout: Layout, fabric: Fabric) -> float:
    """The compute time one rank loses beside that all-reduce (0 where the curves say none)."""
    servers, gpus = layout.servers, layout.gpus
    intra, inter = fabric.intra, fabric.across(servers)
    inside = intra.ring_lost(gpus, nbytes) if intra is not None else 0.0
    across = inter.ring_lost(servers, nbytes) if inter is not None else 0.0
    return inside + across


class MissingLink(ValueError):
    """A layout needs a link level that was neither measured nor described."""


def _need(curve: LinkCurve | None, where: str) -> LinkCurve:
    if curve is None:
        raise MissingLink(f"no link curve {where}: measure an all-reduce there or describe it")
    return curve


def predict(workload: Workload, layout: Layout, fabric: Fabric) -> Prediction:
    try:
        step_s, communication_s = _step(workload, layout, fabric)
    except MissingLink as missing:
        return Prediction(layout, 0.0, 0.0, 0.0, 0.0, 0.0, str(missing))
    rate = layout.total * workload.batch / step_s
    return Prediction(
        layout, step_s, rate, workload.step_s / step_s, communication_s, step_s - workload.step_s
    )


def _step(workload: Workload, layout: Layout, fabric: Fabric) -> tuple[float, float]:
    """The step's time and its communication's, for every GPU alike; the data-parallel
    wrapper's measured cost is in every step of more than one GPU, and each step's compute
    is its slowest rank's (Workload.slowest).

    An all-reduce that runs while backward does takes from backward the compute its curve says
    is lost beside it (CPU processes share their CPUs with communication), for the part of it
    backward is still running: backward, and every bucket it has yet to make, ends later."""
    if layout.total == 1:
        return workload.step_s, 0.0
    workload = workload.at_speed(
        workload.step_s * workload.slowest(layout.total), workload.batch, workload.source
    )
    done, total, late = 0.0, 0.0, 0.0
    for nbytes, ready in buckets(workload):
        start = max(ready + late, done)
        took = allreduce_s(nbytes, layout, fabric)
        beside = workload.backward_end_s + late - start
        if beside > 0 and took > 0:
            late += compute_lost_s(nbytes, layout, fabric) * min(1.0, beside / took)
        done = start + took
        total += took
    optimizer = workload.step_s - workload.backward_end_s
    if workload.timing == AFTER_BACKWARD:
        return workload.step_s + workload.overhead_s + total, total
    return max(workload.backward_end_s + late, done) + optimizer + workload.overhead_s, total


def efficiency_vs_server(prediction: Prediction, one_server: Prediction) -> float | None:
    """Scale-out efficiency: S servers' images/s ÷ (S × one server's)."""
    if not prediction.images_per_s or not one_server.images_per_s:
        return None
    return prediction.images_per_s / (prediction.layout.servers * one_server.images_per_s)


def network_for(workload: Workload, layout: Layout, fabric: Fabric, target: float) -> float | None:
    """The network bus bandwidth (bytes/s) at which `layout` reaches `target` efficiency
    against one GPU: where scale-out stops costing more than `1 − target` of each GPU. None
    where no bandwidth would do (the step inside a server or the latency already costs more);
    0.0 where the layout needs no network and reaches it without."""
    if layout.servers == 1:
        return 0.0 if predict(workload, layout, fabric).efficiency_vs_gpu >= target else None
    base = fabric.across(layout.servers)
    if base is None:
        raise MissingLink("no link curve between servers to vary")

    def efficiency(busbw: float) -> float:
        curve = base.with_busbw(busbw)
        return predict(workload, layout, Fabric(fabric.intra, curve)).efficiency_vs_gpu

    low, high = 1e3, 1e15  # 1 kB/s to 1 PB/s
    if efficiency(high) < target:
        return None
    for _ in range(200):  # bisection on a log scale, to a part in 10⁴
        middle = (low * high) ** 0.5
        if efficiency(middle) >= target:
            high = middle
        else:
            low = middle
        if high / low < 1.0001:
            break
    return high
