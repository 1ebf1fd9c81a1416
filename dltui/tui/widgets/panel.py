"""The base of every widget drawn from a `ServerView`: lazy rendering, charts on a shared frame.

Panels build their text in `render()`, which Textual calls only for what is on screen, and
the app syncs only the panels in view: 64 servers × 8 GPUs must not cost 512 renders a tick.
Their height is set by the strip's layout (the same in every column, so servers line up) or,
on the detail screen, `auto`: a render that changes its number of lines asks for a layout.
"""

from __future__ import annotations

import math
from collections.abc import Hashable

from textual.content import Content
from textual.widget import Widget

from dltui.fleet.state import ServerView
from dltui.tui.charts import Frame
from dltui.tui.graph import MARGIN, plot_points
from dltui.tui.spark import PhaseSpan, mark_events, phase_marks
from dltui.tui.view import MonitorView
from dltui.tui.widgets.server_flags import event_times

RECENT_PHASES = 400  # more than fit a chart's hour, however short the cases
DEFAULT_WIDTH = 34
MIN_POINT_S = 0.5
"""A chart redraws at most this often, whatever the window (the app's redraw rate)."""


class FleetPanel(Widget):
    """A panel showing part of one server; subclasses say what in `lines()`."""

    DEFAULT_CSS = """
    FleetPanel {
        height: auto;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        &.-boxed {
            border: round $primary-muted;
            border-title-color: $text-muted;
            padding: 0 1;
        }
    }
    """

    def __init__(self, server: ServerView, view: MonitorView) -> None:
        super().__init__()
        self.server = server
        self.view = view
        self._line_count: int | None = None
        self._drawn_version: Hashable = None

    def title(self) -> str | None:
        """The border title; None for a panel without one."""
        return None

    def subtitle(self) -> str | None:
        """The bottom border's text (a time axis); None for none."""
        return None

    def lines(self, width: int) -> list[Content]:
        raise NotImplementedError

    @property
    def muted(self) -> bool:
        """A server we cannot hear any more: its last values, greyed."""
        return self.server.link != "live" and not self.view.timebase.replay

    def frame(self, width: int, height: int) -> Frame:
        """The frame of a chart `width` × `height` on this server's clock and the window."""
        chars, points = plot_points(width, height)
        return Frame(self.view.timebase.now(self.server.source), self.view.window, chars, points)

    def marks(self, frame: Frame) -> list[int]:
        """Per character of the frame: the benchmark phase band behind it, and where the
        server's health events happened."""
        recent = self.server.phases[-RECENT_PHASES:]
        events = event_times(self.server)
        if not (recent or events) or not frame.chars:
            return []
        spans: list[PhaseSpan] = [(phase.start, phase.end, phase.case) for phase in recent]
        first = frame.last_char - frame.chars + 1
        marks = phase_marks(spans, first, frame.chars, frame.char_seconds)
        return mark_events(marks, events, first, frame.char_seconds)

    def charts_now(self) -> bool:
        """Whether this panel draws charts now (see `sync`)."""
        return False

    def _chart_version(self) -> Hashable:
        """What a panel of charts draws changes when a new point starts at the right of its
        charts (or the view, the link or the benchmark cases change), not with every sample:
        a point of a minute's chart 40 cells wide is over a second, of an hour's half a
        minute. Painting the dense braille is what costs; the figures beside it wait a point."""
        chars = max((self.content_size.width or DEFAULT_WIDTH) - MARGIN, 1)
        point_s = max(self.view.window / (chars * 2), MIN_POINT_S)
        now = self.view.timebase.now(self.server.source)
        server = self.server
        return (self.view.version, server.link, len(server.phases), len(server.events.events),
                math.floor(now / point_s))  # fmt: skip

    def sync(self, version: Hashable) -> bool:
        """Redraw if the fleet or the view changed since this panel last drew (a panel of
        charts: see `_chart_version`); cheap, the work is in render(). True when it will
        redraw."""
        if self.charts_now():
            version = self._chart_version()
        if version == self._drawn_version:
            return False
        self._drawn_version = version
        title = self.title()  # names in it are data: Content, never parsed as markup
        self.border_title = None if title is None else Content(title)
        self.border_subtitle = self.subtitle()
        self.refresh()
        return True

    def on_resize(self) -> None:
        self.border_subtitle = self.subtitle()  # a time axis as wide as the panel now is

    def render(self) -> Content:
        # Before its first layout a panel has no size yet; guess the usual column's width.
        lines = self.lines(self.content_size.width or DEFAULT_WIDTH)
        if self._line_count is not None and len(lines) != self._line_count:
            self.call_later(self.refresh, layout=True)
        self._line_count = len(lines)
        return Content("\n").join(lines)
