"""The overlay (`o`): one chart per metric with a line per server, and a column beside each
chart with every server's value and its difference from the baseline (`B − A`, `B / A`).

Where the side-by-side columns ask the eye to compare across the screen, this puts servers on
one axis: the same window, each on its own clock (a replay's recordings from their starts).
`b` picks the baseline; `w` the window.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Header

from dltui.fleet.compare import server_names
from dltui.fleet.state import Fleet, ServerView
from dltui.formatting import fmt_ratio, fmt_short
from dltui.tui.charts import Chart, Frame, present, total_charts, total_latest, total_plot
from dltui.tui.graph import AXIS, GUTTER, axis_labels, line_rows, time_axis, window_label
from dltui.tui.view import MonitorView
from dltui.tui.widgets.fitted_footer import FittedFooter

COLORS = ("#5fafff", "#ffaf5f", "#87d75f", "#d787d7", "#5fd7d7", "#ff5f5f", "#d7d75f", "#afafaf")
"""A colour per server, in order; more servers than colours are not drawn (filter with /)."""
DIFF_WIDTH = 30
REDRAW_S = 0.5
MIN_ROWS = 3


def difference(value: float | None, base: float | None, unit: str) -> str:
    """'+120 W 1.21×': this server against the baseline."""
    if value is None or base is None:
        return ""
    sign = "+" if value >= base else "−"
    ratio = f" {fmt_ratio(value / base)}" if base else ""
    return f"{sign}{fmt_short(abs(value - base), unit)}{ratio}"


class OverlayChart(Widget):
    """One metric, a line per server, the values and differences at its right."""

    DEFAULT_CSS = """
    OverlayChart {
        height: 3;
        padding: 0 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def __init__(self, chart: Chart, screen: OverlayScreen) -> None:
        super().__init__()
        self.chart = chart
        self.owner = screen

    def render(self) -> Content:
        owner = self.owner
        width, height = self.content_size.width, max(self.content_size.height, 1)
        chars = max(width - GUTTER - AXIS - 1 - DIFF_WIDTH, 4)
        view = owner.view
        plots, tops = [], []
        for server in owner.servers:
            frame = Frame(view.timebase.now(server.source), view.window, chars, chars * 2)
            plot = total_plot(self.chart, server, frame)
            plots.append(plot)
            if plot is not None:
                tops.append(plot.top)
        top = max(tops, default=1.0)
        unit = self.chart.unit
        lines_of = [plot.values if plot is not None else [math.nan] * chars * 2 for plot in plots]
        grid = line_rows(lines_of, top, height)
        axis = axis_labels(top, unit, height)
        values = [total_latest(self.chart, server) for server in owner.servers]
        base_index = owner.baseline
        side = []
        for index in range(len(owner.servers)):
            mark = "◆" if index == base_index else "■"
            words = fmt_short(values[index], unit)
            if index != base_index:
                words += "  " + difference(values[index], values[base_index], unit)
            side.append(Content.assemble((mark, COLORS[index]), " ", (words, "bold")))
        lines = []
        for row in range(height):
            name = self.chart.label if row == 0 else ""
            tick = "┤" if axis[row].strip() else "│"
            parts: list[tuple[str, str] | str] = [
                (name.ljust(GUTTER)[:GUTTER], "$text-muted"),
                (axis[row] + tick, "$text-muted"),
            ]
            parts += [
                (char, COLORS[owner_index] if owner_index >= 0 else "")
                for char, owner_index in grid[row]
            ]
            line = Content.assemble(*parts) + "  "
            if row < len(side):
                line += side[row]
            lines.append(line)
        return Content("\n").join(lines)


class OverlayScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,o", "app.pop_screen", "Back"),
        Binding("b", "baseline", "Baseline"),
        Binding("w", "window", "Window"),
    ]

    DEFAULT_CSS = """
    OverlayScreen {
        & #legend {
            height: 1;
            padding: 0 1;
            background: $boost;
        }
        & #time {
            height: 1;
            padding: 0 1;
            color: $text-muted;
        }
    }
    """

    def __init__(self, fleet: Fleet, view: MonitorView, servers: list[ServerView]) -> None:
        super().__init__()
        self.fleet = fleet
        self.view = view
        self.servers = servers[: len(COLORS)]
        self.left_out = len(servers) - len(self.servers)
        self.baseline = 0
        self.charts: list[OverlayChart] = []
        self._drawn: Hashable = None

    def compose(self) -> ComposeResult:
        self.charts = [OverlayChart(chart, self) for chart in present(total_charts(), self.servers)]
        yield Header()
        yield Legend(self)
        with VerticalScroll():
            yield from self.charts
        yield TimeAxis(self)
        yield FittedFooter()

    def on_mount(self) -> None:
        self.sub_title = "overlay"
        self.set_interval(REDRAW_S, self.redraw)

    def on_resize(self) -> None:
        """Charts share the height, never under MIN_ROWS (the list scrolls then)."""
        room = self.size.height - 5
        count = max(len(self.charts), 1)
        rows = max(room // count, MIN_ROWS)
        extra = room - rows * count if rows * count < room else 0
        for index, chart in enumerate(self.charts):
            chart.styles.height = rows + (index < extra)

    def redraw(self) -> None:
        drawn = (self.fleet.version, self.view.version, self.baseline)
        if drawn == self._drawn:
            return
        self._drawn = drawn
        for widget in (*self.charts, self.query_one(Legend), self.query_one(TimeAxis)):
            widget.refresh()

    def action_baseline(self) -> None:
        if self.servers:
            self.baseline = (self.baseline + 1) % len(self.servers)
            self.redraw()

    def action_window(self) -> None:
        self.view.next_window()
        self.redraw()


class Legend(Widget):
    def __init__(self, owner: OverlayScreen) -> None:
        super().__init__(id="legend")
        self.owner = owner

    def render(self) -> Content:
        owner = self.owner
        names = server_names(owner.fleet)
        parts: list[tuple[str, str] | str] = []
        for index, server in enumerate(owner.servers):
            mark = "◆" if index == owner.baseline else "■"
            words = names.get(server.source, server.source)
            parts += [(f"{mark} ", COLORS[index]), (words, "bold"), "   "]
        base = owner.servers[owner.baseline] if owner.servers else None
        if base is not None:
            parts.append(
                (f"differences against ◆ {names.get(base.source, base.source)} (b)", "$text-muted")
            )
        if owner.left_out:
            parts.append(
                (f" · {owner.left_out} more not drawn (/ filters servers)", "$text-warning")
            )
        return Content.assemble(*parts)


class TimeAxis(Widget):
    def __init__(self, owner: OverlayScreen) -> None:
        super().__init__(id="time")
        self.owner = owner

    def render(self) -> Content:
        chars = max(self.content_size.width - GUTTER - AXIS - 1 - DIFF_WIDTH, 4)
        axis = time_axis(chars, self.owner.view.window)
        return Content(
            " " * (GUTTER + AXIS + 1) + axis + f"  ({window_label(self.owner.view.window)}, w)"
        )
