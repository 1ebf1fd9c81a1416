"""Link curves: how long an all-reduce takes against its size, per link level.

A curve is the alpha-beta model of a ring (the NCCL and Gloo engines' own): each of the
2(n−1) steps of a ring all-reduce over n ranks costs a latency α, and each rank moves
2(n−1)/n of the message over a bus bandwidth B, so t = 2(n−1)·α + 2(n−1)/n · bytes ÷ B (B is
what nccl-tests calls busbw at large sizes). Fitted to measured all-reduce times by least
squares on relative error weighted by time: every size counts, and the sizes that take a
step's time (the buckets of megabytes) count most. The fit's error is kept and shown.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

INTRA = "intra"
"""Between the GPUs (or processes) of one server: NVLink, PCIe, shared memory."""
INTER = "inter"
"""Between servers: the network."""


@dataclass(frozen=True, slots=True)
class LinkCurve:
    level: str
    """INTRA or INTER."""
    alpha_s: float
    """Latency per ring step."""
    busbw: float
    """Bus bandwidth, bytes/s."""
    source: str
    """What it came from, in words: "measured: gloo all-reduce, 2 servers, 6 sizes" or
    "described: 100 Gbit/s RDMA at 90%"."""
    error: float | None = None
    """The fit's largest relative error over its points; None where nothing was fitted."""
    points: int = 0
    efficiency: float = 1.0
    """The share of a described link's line rate `busbw` is (measured: 1, it is what the link
    gave)."""
    lost_alpha_s: float = 0.0
    lost_s_per_byte: float = 0.0
    """Compute time a rank loses to an all-reduce running beside it, per call and per byte it
    moves (measured on CPU processes, which share their CPUs with communication; 0 where not
    measured, as on GPUs)."""

    def ring(self, ranks: int, nbytes: float) -> float:
        """An all-reduce of `nbytes` over `ranks` ranks on this link."""
        if ranks <= 1:
            return 0.0
        steps = 2 * (ranks - 1)
        return steps * self.alpha_s + steps / ranks * nbytes / self.busbw

    def half_ring(self, ranks: int, nbytes: float) -> float:
        """A reduce-scatter, or an all-gather: half a ring all-reduce."""
        return self.ring(ranks, nbytes) / 2

    def ring_lost(self, ranks: int, nbytes: float) -> float:
        """The compute time a rank loses beside a ring all-reduce of `nbytes`."""
        if ranks <= 1:
            return 0.0
        return self.lost_alpha_s + self.lost_s_per_byte * 2 * (ranks - 1) / ranks * nbytes

    def with_busbw(self, busbw: float) -> LinkCurve:
        return replace(self, busbw=busbw, error=None, points=0)

    @property
    def line_gbit(self) -> float:
        """The line rate, Gbit/s, that gives this bus bandwidth."""
        return self.busbw / self.efficiency * 8 / 1e9


def fit(
    level: str,
    ranks: int,
    points: Sequence[tuple[float, float]],
    source: str,
    lost_points: Sequence[tuple[float, float]] = (),
) -> LinkCurve:
    """The curve through measured (bytes, seconds) all-reduces over `ranks` ranks, and the
    line through (bytes, compute seconds lost beside one) where measured.

    t = a + b·bytes by least squares on relative error weighted by time (weights 1/t); then
    α = a / 2(n−1) and B = 2(n−1)/n ÷ b. Needs two sizes at least; a negative intercept
    (noise at small sizes) is held at zero and the slope refitted.
    """
    if ranks < 2:
        raise ValueError("an all-reduce curve needs two ranks or more")
    sizes = sorted({size for size, _ in points})
    if len(sizes) < 2:
        raise ValueError("a link curve needs all-reduces of two sizes at least")
    if not all(0 < seconds < math.inf for _, seconds in points):
        raise ValueError("an all-reduce time must be a positive number")
    if not all(0 <= seconds < math.inf for _, seconds in lost_points):
        raise ValueError("compute lost beside an all-reduce must be a number from 0")
    a, b = _weighted_line(points)
    if a < 0:
        a = 0.0
        b = sum(x for x, _ in points) / sum(x * x / t for x, t in points)
    if b <= 0:
        raise ValueError("all-reduce times do not grow with size: no bandwidth to fit")
    steps = 2 * (ranks - 1)
    curve = LinkCurve(level, a / steps, steps / ranks / b, source, None, len(points))
    worst = max(abs(curve.ring(ranks, x) - t) / t for x, t in points)
    lost_alpha, lost_per_byte = _lost_line(ranks, lost_points)
    return replace(curve, error=worst, lost_alpha_s=lost_alpha, lost_s_per_byte=lost_per_byte)


def _lost_line(ranks: int, points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Compute seconds lost per call against the bytes a rank moves, 2(n−1)/n of the
    message: an ordinary least-squares line, held at or above zero."""
    if len({x for x, _ in points}) < 2:
        return 0.0, 0.0
    moved = [(2 * (ranks - 1) / ranks * x, cpu) for x, cpu in points]
    n = len(moved)
    mean_x = sum(x for x, _ in moved) / n
    mean_y = sum(y for _, y in moved) / n
    slope = sum((x - mean_x) * (y - mean_y) for x, y in moved) / sum(
        (x - mean_x) ** 2 for x, _ in moved
    )
    slope = max(slope, 0.0)
    return max(mean_y - slope * mean_x, 0.0), slope


def _weighted_line(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Intercept and slope minimising Σ(a + b·x − t)²/t."""
    w = [1 / t for _, t in points]
    sw = sum(w)
    sx = sum(wi * x for wi, (x, _) in zip(w, points, strict=True))
    st = sum(wi * t for wi, (_, t) in zip(w, points, strict=True))
    sxx = sum(wi * x * x for wi, (x, _) in zip(w, points, strict=True))
    sxt = sum(wi * x * t for wi, (x, t) in zip(w, points, strict=True))
    det = sw * sxx - sx * sx
    if math.isclose(det, 0.0, abs_tol=1e-300):
        raise ValueError("a link curve needs all-reduces of two sizes at least")
    b = (sw * sxt - sx * st) / det
    return (st - b * sx) / sw, b


def described(level: str, gbit_per_s: float, efficiency: float, latency_s: float,
              source: str) -> LinkCurve:  # fmt: skip
    """A link from its datasheet: line rate in Gbit/s, the share of it an all-reduce gets,
    and the latency of one step."""
    if gbit_per_s <= 0 or not 0 < efficiency <= 1 or latency_s < 0:
        raise ValueError("a link needs a positive rate, an efficiency in (0, 1], latency ≥ 0")
    return LinkCurve(level, latency_s, gbit_per_s * 1e9 / 8 * efficiency, source, None, 0,
                     efficiency)  # fmt: skip
