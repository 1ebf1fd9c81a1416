"""Every GPU of a server in one line each, as nvitop lists them: utilization, memory, power,
temperature, SM clock, tensor activity, PCIe and NVLink, as many columns as the width holds.

Bars are drawn against each field's physical scale (memory against its size, the clock against
its maximum), so eight GPUs read at a glance at 80×24. The row under the cursor opens the
detail screen (enter or d).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual.content import Content

from dltui.fleet.state import GpuView, ServerView
from dltui.formatting import fmt_short, gbps_figure, gib_figure
from dltui.protocol.fields import GPU_FIELDS
from dltui.tui import danger
from dltui.tui.charts import gpu_info
from dltui.tui.graph import MUTED
from dltui.tui.scales import physical_top
from dltui.tui.spark import hbar
from dltui.tui.widgets.panel import FleetPanel

MAX_BAR = 16


def _latest(gpu: GpuView, name: str) -> float | None:
    series = gpu.series.get(name)
    point = series.latest() if series is not None else None
    return point[1] if point is not None else None


def _pair(gpu: GpuView, up: str, down: str) -> str:
    """'↑5.0 ↓2.0': a link's two directions in GB/s (the column's unit), in ten cells; '–'
    where the GPU reports neither."""
    sent, received = _latest(gpu, up), _latest(gpu, down)
    if sent is None and received is None:
        return "–"
    return f"↑{gbps_figure(sent)} ↓{gbps_figure(received)}"


@dataclass(frozen=True, slots=True)
class Column:
    header: str
    width: int
    """Cells of its text (a bar comes before it, if it has one)."""
    bar: bool
    text: Callable[[ServerView, GpuView], str]
    fraction: Callable[[ServerView, GpuView], float | None] = lambda server, gpu: None
    level: Callable[[danger.Latest], danger.Level] | None = None
    """How alarming its reading is (danger.py), for the text's colour."""


def _fraction(name: str) -> Callable[[ServerView, GpuView], float | None]:
    field = GPU_FIELDS[name]
    floor = field.chart.floor if field.chart is not None else 0.0

    def fraction(server: ServerView, gpu: GpuView) -> float | None:
        value = _latest(gpu, name)
        top = physical_top(field, gpu.series, gpu_info(server, gpu.index)) or floor
        return value / top if value is not None and top else None

    return fraction


def _memory(server: ServerView, gpu: GpuView) -> str:
    """GiB used with one decimal (the column's unit; the bar is against the total)."""
    return gib_figure(_latest(gpu, "mem_used"))


def _power(server: ServerView, gpu: GpuView) -> str:
    power, limit = _latest(gpu, "power"), _latest(gpu, "power_limit")
    if power is None:
        return "–"
    return f"{power:.0f}/{limit:.0f} W" if limit else f"{power:.0f} W"


def _temperature(server: ServerView, gpu: GpuView) -> str:
    return fmt_short(_latest(gpu, "temp"), "°C")


def _clock(server: ServerView, gpu: GpuView) -> str:
    clock = _latest(gpu, "clock_sm")
    return f"{clock:.0f}" if clock is not None else "–"


def _percent(name: str) -> Callable[[ServerView, GpuView], str]:
    return lambda server, gpu: fmt_short(_latest(gpu, name), "%")


COLUMNS = (
    Column("util", 4, True, _percent("util_gpu"), _fraction("util_gpu")),
    Column("mem GiB", 5, True, _memory, _fraction("mem_used")),
    Column("power", 9, False, _power, level=danger.power),
    Column("temp", 5, False, _temperature, level=danger.temperature),
    Column("tensor", 6, False, _percent("tensor_active")),
    Column("SM MHz", 4, True, _clock, _fraction("clock_sm"), danger.throttle),
    Column("PCIe GB/s", 10, False, lambda server, gpu: _pair(gpu, "pcie_tx", "pcie_rx")),
    Column("NVLink GB/s", 11, False, lambda server, gpu: _pair(gpu, "nvlink_tx", "nvlink_rx")),
)
"""In the order they are given up when the width runs short (the last first)."""
BAR_MIN = 3
INDEX = 3


def fit(width: int, columns: tuple[Column, ...] = COLUMNS) -> tuple[list[Column], int]:
    """The columns that fit `width`, and how wide each of their bars is."""
    shown: list[Column] = []
    used = INDEX
    for column in columns:
        need = 1 + column.width + (BAR_MIN + 1 if column.bar else 0)
        if used + need > width:
            break
        shown.append(column)
        used += need
    bars = sum(column.bar for column in shown)
    extra = (width - used) // bars if bars else 0
    return shown, BAR_MIN + min(extra, MAX_BAR - BAR_MIN)


class GpuTable(FleetPanel):
    """A header and a line per GPU; it is as tall as the GPU table of the server with most
    GPUs on screen, so what comes under it lines up across servers."""

    DEFAULT_CSS = """
    GpuTable {
        padding: 0 1;
    }
    """

    def lines(self, width: int) -> list[Content]:
        server = self.server
        inventory = server.inventory
        indices = sorted(
            {gpu.index for gpu in inventory.gpus} if inventory else set() | server.gpus.keys()
        )
        if not indices:
            return [Content.styled("no GPU", "$text-muted")]
        columns, bar = fit(width)
        header = "GPU"
        for column in columns:
            cells = (bar + 1 if column.bar else 0) + column.width
            header += " " + column.header.ljust(cells)
        lines = [Content.styled(header.rstrip(), "bold $text-muted")]
        muted = self.muted
        for index in indices:
            lines.append(self._row(index, columns, bar, muted))
        return lines

    def _row(self, index: int, columns: list[Column], bar: int, muted: bool) -> Content:
        server = self.server
        gpu = server.gpus.get(index)
        name = (f"{index:>2} ", "$text-muted")
        if gpu is None:
            return Content.assemble(name, ("no samples yet", "$text-muted"))
        if gpu.state == "lost":
            return Content.assemble(name, ("✕ lost: stopped answering NVML", "bold $text-error"))
        latest = gpu.last
        errors = danger.memory_errors(latest)
        if gpu.state == "error":
            name = (f"{index:>2}⚠", "bold $text-warning")
        elif errors != "ok" and not muted:  # ECC or remapping: the GPU itself is marked
            name = (f"{index:>2}!", danger.STYLES[errors])
        value = "$text-muted" if muted else "bold"
        parts: list[tuple[str, str] | str] = [name]
        for column in columns:
            parts.append(" ")
            if column.bar:
                fraction = column.fraction(server, gpu)
                style = MUTED if muted else "$accent"
                parts += [(hbar(fraction, bar), f"{style} on $boost"), " "]
            text = column.text(server, gpu).rjust(column.width)
            level = column.level(latest) if column.level is not None and not muted else "ok"
            parts.append((text, danger.STYLES[level] or value))
        return Content.assemble(*parts)
