"""The base of every widget drawn from a `ServerView`: lazy rendering, relayout on new lines.

Panels build their text in `render()`, which Textual calls only for what is on screen, and
the app syncs only the panels in view: 64 servers × 8 GPUs must not cost 512 renders a tick.
Their height is `auto`; a render that changes the number of lines (a throttle reason appears, a
GPU is lost) asks for a layout, and Textual measures the panel again.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.widget import Widget

from dltui.fleet.series import Series
from dltui.fleet.state import ServerView
from dltui.formatting import fmt_bytes
from dltui.tui.widgets.server_flags import event_times
from dltui.tui.widgets.spark import (
    PhaseSpan,
    cell_of,
    cells,
    mark_events,
    phase_marks,
    scale_top,
    sparkline,
)

LABEL_WIDTH = 6
RECENT_PHASES = 200  # more than fit a chart's two minutes, however short the cases
BAND_STYLES = ("", " on $foreground 6%", " on $foreground 12%", " on $accent 25%",
               " on $error 45%")  # fmt: skip
"""Backgrounds of chart cells outside a benchmark phase, inside one (alternating), at its start,
and where a health event or alert happened (spark.mark_events)."""
DEFAULT_WIDTH = 34
GIB = 2**30


def fmt_used(used: float | None, total: float | None) -> str:
    """'70.1/141 GiB': used and total in one unit, short enough to leave room for a sparkline."""
    if used is None:
        return "–"
    if total is None:
        return fmt_bytes(used)
    return f"{used / GIB:.1f}/{total / GIB:.0f} GiB"


@dataclass(frozen=True, slots=True)
class Meter:
    """One line of a panel: label, sparkline of the recent past, current value."""

    label: str
    series: Series
    value: str
    color: str
    limit: float | None = None
    """Full scale: 100 for percentages, the field's limit where it has one; None: observed max."""
    floor: float = 0.0


def banded(text: str, color: str, marks: list[int]) -> Content:
    """A chart line with each cell's phase band behind it (`marks` from `phase_marks`,
    aligned to the right end of `text`)."""
    pad = len(text) - len(marks)
    parts: list[tuple[str, str]] = [(text[:pad], color)] if pad > 0 else []
    start = 0
    for index in range(1, len(marks) + 1):
        if index == len(marks) or marks[index] != marks[start]:
            chunk = text[pad + start : pad + index]
            parts.append((chunk, color + BAND_STYLES[marks[start]]))
            start = index
    return Content.assemble(*parts)


def chart_marks(
    meter: Meter, count: int, spans: list[PhaseSpan], events: list[float] | None = None
) -> list[int]:
    """The phase and event marks of a meter's newest `count` cells, which end at its last
    point."""
    last = meter.series.last_time()
    if not (spans or events) or last is None or count <= 0:
        return []
    first = cell_of(last) - count + 1
    return mark_events(phase_marks(spans, first, count), events or [], first)


def meter_lines(
    meters: list[Meter],
    width: int,
    spans: list[PhaseSpan] | None = None,
    events: list[float] | None = None,
) -> list[Content]:
    """Meters laid out in aligned columns, each line exactly `width` cells or less; benchmark
    phases (`spans`) are bands behind the sparklines."""
    if not meters:
        return []
    value_width = max(len(meter.value) for meter in meters)
    spark_width = width - LABEL_WIDTH - value_width - 2
    lines = []
    for meter in meters:
        # Enough points for the widest cells at up to 20 samples a second.
        values = cells(meter.series.points(max(spark_width, 0) * 10), spark_width)
        top = scale_top(values, meter.limit, meter.floor)
        marks = chart_marks(meter, len(values), spans or [], events)
        lines.append(
            Content.assemble(
                (meter.label.ljust(LABEL_WIDTH)[:LABEL_WIDTH], "$text-muted"),
                " ",
                banded(sparkline(values, top, spark_width), meter.color, marks),
                " " if spark_width > 0 else "",
                (meter.value.rjust(value_width), "bold"),
            )
        )
    return lines


class FleetPanel(Widget):
    """A panel showing part of one server; subclasses say what in `lines()`."""

    DEFAULT_CSS = """
    FleetPanel {
        height: auto;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def __init__(self, server: ServerView) -> None:
        super().__init__()
        self.server = server
        self._line_count: int | None = None
        self._drawn_version = -1

    def title(self) -> str | None:
        """The border title; None for a panel without one."""
        return None

    def lines(self, width: int) -> list[Content]:
        raise NotImplementedError

    def spans(self) -> list[PhaseSpan]:
        """The server's recent benchmark phases, for the bands behind its charts."""
        recent = self.server.phases[-RECENT_PHASES:]
        return [(phase.start, phase.end, phase.case) for phase in recent]

    def events(self) -> list[float]:
        """When the server's health events happened, marked on its charts."""
        return event_times(self.server)

    def sync(self, version: int) -> bool:
        """Redraw if the fleet changed since this panel last drew; cheap, the work is in
        render(). True when it will redraw."""
        if version == self._drawn_version:
            return False
        self._drawn_version = version
        self.border_title = self.title()
        self.refresh()
        return True

    def render(self) -> Content:
        # Before its first layout a panel has no size yet; guess the usual column's width.
        lines = self.lines(self.content_size.width or DEFAULT_WIDTH)
        if self._line_count is not None and len(lines) != self._line_count:
            self.call_later(self.refresh, layout=True)
        self._line_count = len(lines)
        return Content("\n").join(lines)
