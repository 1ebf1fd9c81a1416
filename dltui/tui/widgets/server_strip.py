"""The servers side by side, scrolled sideways a whole column at a time, all laid out alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.containers import HorizontalScroll
from textual.content import Content
from textual.widget import Widget

from dltui.fleet.state import ServerView
from dltui.tui.charts import Chart, gpu_charts, present, total_charts
from dltui.tui.layout import HEADER_ROWS, Layout, plan
from dltui.tui.view import Mode, MonitorView
from dltui.tui.widgets.server_column import ServerColumn

MIN_COLUMN = 40


@dataclass(frozen=True, slots=True)
class Shape:
    """What the layout depends on: the columns' size and what the shown servers have."""

    height: int
    width: int
    gpus: int
    cores: int
    gpu_charts: tuple[Chart, ...]
    total_charts: tuple[Chart, ...]
    mode: Mode
    jobs: bool
    """Whether a shown server has run a job: the job lines take their three rows."""

    def layout(self, mode: Mode | None = None) -> Layout:
        return plan(self.height, self.width, self.gpus, self.cores, len(self.gpu_charts),
                    mode or self.mode, self.jobs)  # fmt: skip


class OffScreen(Widget):
    """'◀ 2 more' and '3 more ▶': the servers the strip has scrolled past, either side."""

    DEFAULT_CSS = """
    OffScreen {
        height: 1;
        background: $boost;
        color: $text-muted;
        display: none;
    }
    """

    def __init__(self) -> None:
        super().__init__()
        self.counts = (0, 0, 0)

    def show(self, left: int, right: int, total: int) -> None:
        if (left, right, total) != self.counts:
            self.counts = (left, right, total)
            self.display = bool(left or right)
            self.refresh()

    def render(self) -> Content:
        left, right, total = self.counts
        width = self.content_size.width
        first = f" ◀ {left} more (←)" if left else ""
        last = f"(→) {right} more ▶ " if right else ""
        middle = f"servers {left + 1}–{total - right} of {total}"
        pad = max(width - len(first) - len(last) - len(middle), 2)
        return Content.assemble(
            (first, "bold"), " " * (pad // 2), middle, " " * (pad - pad // 2), (last, "bold")
        )


class ServerStrip(HorizontalScroll):
    """← → move by one server, so the columns on screen are never cut in half (an arrow
    key's default single cell would take 40 presses to reach the next server).

    Only the columns within a screen's width of the view keep their panels laid out: Textual
    arranges every displayed widget on each scroll, and 64 servers × 8 GPUs of panels would
    make a key press wait for 700 placements (benchmarks/ui_scale.py).

    Every column gets the same layout (`dltui.tui.layout`), from the terminal's size and the
    most GPUs and cores any shown server has, so servers line up row for row.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "step(-1)", "Previous server", show=False),
        Binding("right", "step(1)", "Next server", show=False),
        Binding("home", "step_to(0)", "First server", show=False),
        Binding("end", "step_to(-1)", "Last server", show=False),
    ]

    DEFAULT_CSS = """
    ServerStrip {
        scrollbar-size-horizontal: 0;
    }
    """

    def __init__(self, view: MonitorView, off_screen: OffScreen) -> None:
        super().__init__(can_focus=False)  # its columns take the focus; their keys reach it
        self.view = view
        self.off_screen = off_screen
        self.columns: list[ServerColumn] = []
        self.column_width = MIN_COLUMN
        self._shape: Shape | None = None
        self._first = 0
        """The column at the left edge, as last asked for (the scroll lands a moment later)."""

    async def add_servers(self, servers: list[ServerView]) -> None:
        new = [ServerColumn(server, self.view) for server in servers]
        self.columns += new
        await self.mount_all(new)
        self.share_width()

    def on_resize(self) -> None:
        self.share_width()

    def watch_scroll_x(self, old: float, new: float) -> None:
        super().watch_scroll_x(old, new)
        self._first = round(new / self.column_width)  # a mouse wheel moves it too
        self.cull()

    def shown(self) -> list[ServerColumn]:
        return [column for column in self.columns if column.display]

    def cull(self) -> None:
        """Lay out the panels of the columns near the view (its page of columns and the pages
        either side, so stepping within a page changes nothing); the others show a header."""
        shown = self.shown()
        per_page = max(self.size.width // self.column_width, 1)
        first = round(self.scroll_x / self.column_width)
        page = first // per_page
        for index, column in enumerate(shown):
            column.body.display = abs(index // per_page - page) <= 1
        right = max(len(shown) - first - per_page, 0)
        self.off_screen.show(min(first, len(shown)), right, len(shown))

    def share_width(self) -> None:
        """Columns share the width, never narrower than MIN_COLUMN: one server gets long
        charts, and many scroll sideways."""
        shown = self.shown()
        if not shown or not self.size.width:
            return
        self.column_width = max(MIN_COLUMN, self.size.width // len(shown))
        for column in shown:
            column.styles.width = self.column_width
        self.cull()
        self.relayout()

    def relayout(self, force: bool = False) -> None:
        """Work out the layout for the shown servers and hand it to every column; only when
        something it depends on moved (the size, the mode, a server's GPUs or fields)."""
        shown = self.shown()
        servers = [column.server for column in shown]
        gpus = max((len(column.gpu_indices()) for column in shown), default=0)
        cores = max((len(server.cpu_per_core) for server in servers), default=0)
        height = self.size.height - HEADER_ROWS - 1
        view = self.view
        jobs = any(server.latest_job is not None for server in servers)
        shape = Shape(height, self.column_width, gpus, cores, present(gpu_charts(), servers),
                      present(total_charts(), servers), view.mode, jobs)  # fmt: skip
        if shape == self._shape and not force:
            return
        self._shape = shape
        view.gpu_charts, view.total_charts = shape.gpu_charts, shape.total_charts
        view.layout = shape.layout()
        view.scroll_gpus(0)  # within the rows of panels there are now
        for column in self.columns:
            column.apply(view.layout)

    def auto_compact(self) -> bool:
        """Whether the layout chooses the table by itself at this size."""
        return self._shape is None or self._shape.layout("auto").compact

    def on_screen(self) -> list[ServerColumn]:
        """The columns in view: the only ones worth redrawing."""
        return [column for column in self.columns if self.screen.can_view_partial(column)]

    def _column_width(self) -> int:
        shown = self.shown()
        return (shown[0].outer_size.width or 1) if shown else 1

    def action_step(self, direction: int) -> None:
        self._scroll_to_column(self._first + direction)

    def action_step_to(self, index: int) -> None:
        width = self._column_width()
        self._scroll_to_column(round(self.max_scroll_x / width) if index < 0 else index)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """A column taking the focus (tab) comes into view whole, the view moving by columns."""
        shown = self.shown()
        if not isinstance(event.widget, ServerColumn) or event.widget not in shown:
            return
        width = self._column_width()
        per_page = max(self.size.width // width, 1)
        at, first = shown.index(event.widget), self._first
        if not first <= at < first + per_page:
            self._first = at if at < first else at - per_page + 1
            self.scroll_to(x=self._first * width, animate=False)

    def _scroll_to_column(self, index: int) -> None:
        """Put column `index` at the left edge; the focus follows the view: a focused column
        scrolled out of it hands the focus to the nearest one in it."""
        shown = self.shown()
        width = self._column_width()
        first = self._first = min(max(index, 0), max(round(self.max_scroll_x / width), 0))
        self.scroll_to(x=first * width, animate=False)
        per_page = max(self.size.width // width, 1)
        focused = self.app.focused
        if isinstance(focused, ServerColumn) and focused in shown:
            at = shown.index(focused)
            wanted = min(max(at, first), min(first + per_page, len(shown)) - 1)
            if wanted != at:
                shown[wanted].focus(scroll_visible=False)
