"""One server, top to bottom: header, job, host, its GPUs (a table, or a panel each), charts of
its totals. The strip's layout sets every part's height, the same in every column."""

from __future__ import annotations

from collections.abc import Hashable
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Vertical, VerticalScroll

from dltui.fleet.state import ServerView
from dltui.tui.layout import HOST_LINE_ROWS, Layout
from dltui.tui.view import MonitorView
from dltui.tui.widgets.gpu_panel import GpuPanel
from dltui.tui.widgets.gpu_table import GpuTable
from dltui.tui.widgets.host_panel import HostPanel
from dltui.tui.widgets.job_line import JobLine
from dltui.tui.widgets.more_gpus import MoreGpus
from dltui.tui.widgets.panel import FleetPanel
from dltui.tui.widgets.server_charts import ServerCharts
from dltui.tui.widgets.server_header import ServerHeader


class ServerColumn(Vertical, can_focus=True):
    """The header stays put. GPU panels that do not all fit scroll a row of panels at a time,
    every column together (the view's `gpu_row`), a line under them saying how many more;
    a compact table taller than the screen scrolls under the header. The column takes the
    focus as a whole (tab, a click): its header lights up, and d or enter opens that server."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "scroll(-1)", "Scroll up", show=False),
        Binding("down", "scroll(1)", "Scroll down", show=False),
        Binding("pageup", "scroll(-10)", "Page up", show=False),
        Binding("pagedown", "scroll(10)", "Page down", show=False),
    ]

    DEFAULT_CSS = """
    ServerColumn {
        width: 40;
        height: 1fr;
        & > VerticalScroll {
            height: 1fr;
            scrollbar-size-vertical: 1;
            scrollbar-background: $panel;
            scrollbar-color: $primary;
        }
        & Grid {
            height: auto;
            grid-gutter: 0 0;
        }
        &:focus > ServerHeader {
            background: $accent 40%;
        }
    }
    """

    def __init__(self, server: ServerView, view: MonitorView) -> None:
        super().__init__()
        self.server = server
        self.view = view
        self.header = ServerHeader(server, view)
        self.job = JobLine(server, view)
        self.host = HostPanel(server, view)
        self.table = GpuTable(server, view)
        self.grid = Grid()
        self.more = MoreGpus()
        self.charts = ServerCharts(server, view)
        self.body = VerticalScroll(
            self.job, self.host, self.table, self.grid, self.more, self.charts, can_focus=False
        )
        self.gpu_panels: dict[int, GpuPanel] = {}
        self._drawn_version: Hashable = None
        self._applied: Layout | None = None
        self._rows_shown: tuple[Layout | None, int, int] | None = None

    def compose(self) -> ComposeResult:
        yield self.header
        yield self.body

    def action_scroll(self, rows: int) -> None:
        """GPU panels a row (a page: the rows on screen) at a time in every column; else
        this column's body."""
        layout = self._applied
        if layout is not None and layout.more_line():
            page = layout.gpu_rows_shown if abs(rows) > 1 else 1
            self.view.scroll_gpus(page if rows > 0 else -page)
        else:
            self.body.scroll_relative(y=rows, animate=False)

    def parts(self) -> list[FleetPanel]:
        """What shows now, in the current mode."""
        compact = self._applied is None or self._applied.compact
        gpus: list[FleetPanel] = [self.table] if compact else list(self.gpu_panels.values())
        return [self.job, self.host, *gpus, self.charts]

    def _show_gpu_rows(self) -> None:
        """The rows of panels from the view's `gpu_row` on, and how many are off screen."""
        layout = self._applied
        state = (layout, self.view.gpu_row, len(self.gpu_panels))
        if layout is None or state == self._rows_shown:
            return
        self._rows_shown = state
        self.more.display = layout.more_line() and bool(self.gpu_indices())
        per_row = layout.gpu_columns
        first = self.view.gpu_row * per_row
        last = first + layout.gpu_rows_shown * per_row
        panels = list(self.gpu_panels.values())
        for index, panel in enumerate(panels):
            panel.display = first <= index < last
        self.more.show(min(first, len(panels)), max(len(panels) - last, 0))

    def apply(self, layout: Layout) -> None:
        """Take the strip's layout: each part's height, the GPUs as a table or panels."""
        if layout == self._applied:
            return
        self._applied = layout
        self.job.styles.height = layout.job
        self.host.set_class(layout.host > HOST_LINE_ROWS, "-boxed")
        self.charts.host_charted = layout.host > HOST_LINE_ROWS
        self.host.styles.height = layout.host
        self.table.display = layout.compact and layout.table > 0
        self.table.styles.height = layout.table
        self.grid.display = not layout.compact and bool(self.gpu_panels)
        self.grid.styles.grid_size_columns = layout.gpu_columns
        self.grid.styles.grid_rows = str(max(layout.gpu_height, 1))
        # As tall as the most GPUs' panels on screen, whatever this server has: rows line up.
        self.grid.styles.height = layout.gpu_rows_shown * layout.gpu_height
        for panel in self.gpu_panels.values():
            panel.styles.height = layout.gpu_height
        self._size_charts()
        self._show_gpu_rows()
        self._drawn_version = None  # everything draws again at its new size

    def _size_charts(self) -> None:
        """The totals' charts take what is left; without GPUs, the GPUs' rows too."""
        layout = self._applied
        if layout is None:
            return
        rows = layout.filler
        if not self.gpu_indices():
            rows += layout.gpu_area()
            self.table.display = self.grid.display = self.more.display = False
        self.charts.display = rows > 0
        self.charts.styles.height = rows

    def sync(self, version: Hashable) -> None:
        """Redraw what is on screen and changed since it last drew (a panel scrolled out of
        view keeps its version and catches up when it is back; refreshing it while hidden
        would make Textual lay out every column again)."""
        self.header.sync(version)
        if self.server.link != "live":
            self.header.refresh()  # 'offline since … (Ns ago)' moves on without frames
        if version != self._drawn_version:
            self._drawn_version = version
            self._add_gpu_panels(version)
            self._show_gpu_rows()
        for panel in self.parts():
            if panel.display and self.screen.can_view_partial(panel):
                panel.sync(version)

    def gpu_indices(self) -> list[int]:
        inventory = self.server.inventory
        indices = {gpu.index for gpu in inventory.gpus} if inventory else set()
        return sorted(indices | self.server.gpus.keys())

    def _add_gpu_panels(self, version: Hashable) -> None:
        new = [index for index in self.gpu_indices() if index not in self.gpu_panels]
        if new:
            panels = [GpuPanel(self.server, self.view, index) for index in new]
            for panel in panels:
                panel.sync(version)  # titled before it is first drawn
                if self._applied is not None:
                    panel.styles.height = self._applied.gpu_height
            self.gpu_panels.update(zip(new, panels, strict=True))
            self.grid.mount_all(panels)
            self.grid.display = self._applied is not None and not self._applied.compact
            self._size_charts()
