"""What the monitor charts, and how a chart's figures come out of a server's series.

A chart of one GPU reads its series over the window; a chart of a server's totals (below the
compact table, and the overlay's lines) combines its GPUs point by point: a mean for
percentages and clocks, a sum for power, memory and traffic, against the sum of their limits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dltui.fleet.series import Series
from dltui.fleet.state import GpuView, ServerView
from dltui.formatting import fmt_short
from dltui.protocol.fields import GPU_FIELDS, HOST_FIELDS, ChartSpec, Combine, FieldSpec
from dltui.protocol.inventory import GpuInfo
from dltui.tui.graph import Plot
from dltui.tui.scales import full_scale, physical_top

COLORS = {
    "util_gpu": "$success",
    "cpu": "$success",
    "tensor_active": "$success-lighten-2",
    "power": "$warning",
    "temp": "$error",
    "clock_sm": "#b48ead",
    "nvlink_tx": "#88c0d0",
    "nvlink_rx": "#88c0d0",
    "disk_read": "#88c0d0",
    "disk_write": "#88c0d0",
}
"""A chart's colour; any other field takes its unit's (UNIT_COLORS)."""
UNIT_COLORS = {"%": "$success", "B": "$secondary-lighten-3", "B/s": "$primary-lighten-2"}


@dataclass(frozen=True, slots=True)
class Chart:
    """One chart: a field of a GPU (or of the host) whose FieldSpec has a chart."""

    field: FieldSpec
    host: bool = False

    @property
    def name(self) -> str:
        return self.field.name

    @property
    def label(self) -> str:
        return self.spec.label

    @property
    def unit(self) -> str:
        return self.field.unit

    @property
    def spec(self) -> ChartSpec:
        assert self.field.chart is not None, "a Chart is made only of a charted field"
        return self.field.chart

    @property
    def combine(self) -> Combine:
        return self.spec.combine

    @property
    def color(self) -> str:
        return COLORS.get(self.name) or UNIT_COLORS.get(self.unit, "$accent")


def _charts(table: dict[str, FieldSpec], host: bool) -> tuple[Chart, ...]:
    return tuple(Chart(spec, host) for spec in table.values() if spec.chart is not None)


def gpu_charts() -> tuple[Chart, ...]:
    """A GPU panel's charts, top to bottom (protocol/fields.py's order); a field no GPU on
    screen reports is left out (`present`)."""
    return _charts(GPU_FIELDS, host=False)


def host_charts() -> tuple[Chart, ...]:
    return _charts(HOST_FIELDS, host=True)


TOTALS_FIRST = (("util_gpu", False), ("mem_used", False), ("power", False), ("cpu", True),
                ("tensor_active", False), ("mem_used", True))  # fmt: skip
"""The server totals that matter most, first where only a few fit."""


def total_charts() -> tuple[Chart, ...]:
    """Below the compact table (and the overlay), as many as fit: TOTALS_FIRST, then the GPUs'
    other totals, then the host's."""
    charts = [chart for chart in (*gpu_charts(), *host_charts()) if chart.spec.total]
    first = [c for key in TOTALS_FIRST for c in charts if (c.name, c.host) == key]
    return (*first, *(chart for chart in charts if chart not in first))


def present(charts: Sequence[Chart], servers: Sequence[ServerView]) -> tuple[Chart, ...]:
    """The charts some server reports a field for: the same list for every column."""
    gpu_fields = {name for s in servers for gpu in s.gpus.values() for name in gpu.series}
    host_fields = {name for server in servers for name in server.host}
    return tuple(c for c in charts if c.name in (host_fields if c.host else gpu_fields))


@dataclass(frozen=True, slots=True)
class Frame:
    """Where a chart's plot ends and how much it spans: the same for every chart of a
    server, so their cells and phase bands line up."""

    end: float
    window: float
    chars: int
    points: int

    @property
    def char_seconds(self) -> float:
        return self.window / self.chars if self.chars else self.window

    @property
    def last_char(self) -> int:
        return math.floor(self.end / self.char_seconds)

    def cells(self, series: Series | None) -> list[float]:
        """The series' points for this frame, whole characters aligned to absolute time."""
        if series is None or not self.points:
            return [math.nan] * self.points
        per_char = self.points // self.chars
        seconds = self.char_seconds / per_char
        end = (self.last_char + 1) * self.char_seconds - seconds / 2
        return series.cells(end, seconds, self.points)


def gpu_info(server: ServerView, index: int) -> GpuInfo | None:
    gpus = server.inventory.gpus if server.inventory else []
    return next((gpu for gpu in gpus if gpu.index == index), None)


def _observed(values: Sequence[float]) -> float:
    return max((v for v in values if not math.isnan(v)), default=0.0)


def _latest(series: Series | None) -> float | None:
    point = series.latest() if series is not None else None
    return point[1] if point is not None else None


def gpu_plot(chart: Chart, server: ServerView, gpu: GpuView, frame: Frame) -> Plot:
    series = gpu.series.get(chart.name)
    values = frame.cells(series)
    physical = physical_top(chart.field, gpu.series, gpu_info(server, gpu.index))
    top = full_scale(chart.field, physical, _observed(values))
    value = fmt_short(_latest(series), chart.unit)
    return Plot(chart.label, value, chart.unit, top, chart.color, values)


def _combine(how: Combine, columns: list[list[float]], count: int) -> list[float]:
    out = []
    for index in range(count):
        found = [column[index] for column in columns if not math.isnan(column[index])]
        if not found:
            out.append(math.nan)
        elif how == "sum":
            out.append(sum(found))
        elif how == "max":
            out.append(max(found))
        else:
            out.append(sum(found) / len(found))
    return out


def total_latest(chart: Chart, server: ServerView) -> float | None:
    """The server's latest value of the field, its GPUs combined as the chart combines them."""
    if chart.host:
        return _latest(server.host.get(chart.name))
    latest = [v for gpu in server.gpus.values() if (v := _latest(gpu.series.get(chart.name)))
              is not None]  # fmt: skip
    return _combine(chart.combine, [[v] for v in latest], 1)[0] if latest else None


def total_plot(chart: Chart, server: ServerView, frame: Frame) -> Plot | None:
    """The server's chart of this field, its GPUs combined; None where it has none."""
    if chart.host:
        series = server.host.get(chart.name)
        if series is None:
            return None
        values = frame.cells(series)
        physical = physical_top(chart.field, server.host, None)
        top = full_scale(chart.field, physical, _observed(values))
        return Plot(
            chart.label,
            fmt_short(_latest(series), chart.unit),
            chart.unit,
            top,
            chart.color,
            values,
        )
    gpus = [gpu for gpu in server.gpus.values() if chart.name in gpu.series]
    if not gpus:
        return None
    columns = [frame.cells(gpu.series[chart.name]) for gpu in gpus]
    values = _combine(chart.combine, columns, frame.points)
    tops = [physical_top(chart.field, g.series, gpu_info(server, g.index)) for g in gpus]
    physical = None
    if all(tops):
        physical = (
            sum(t or 0.0 for t in tops) if chart.combine == "sum" else max(t or 0 for t in tops)
        )
    top = full_scale(chart.field, physical, _observed(values))
    label = chart.label if chart.combine != "sum" or len(gpus) == 1 else f"Σ{chart.label}"
    return Plot(
        label,
        fmt_short(total_latest(chart, server), chart.unit),
        chart.unit,
        top,
        chart.color,
        values,
    )
