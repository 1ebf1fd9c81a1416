"""The servers side by side, scrolled sideways a whole column at a time."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.containers import HorizontalScroll

from dltui.fleet.state import ServerView
from dltui.tui.widgets.server_column import ServerColumn

MIN_COLUMN = 40


class ServerStrip(HorizontalScroll):
    """← → move by one server, so the columns on screen are never cut in half (an arrow
    key's default single cell would take 40 presses to reach the next server).

    Only the columns within a screen's width of the view keep their panels laid out: Textual
    arranges every displayed widget on each scroll, and 64 servers × 8 GPUs of panels would
    make a key press wait for 700 placements (benchmarks/ui_scale.py).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "step(-1)", "Previous server", show=False),
        Binding("right", "step(1)", "Next server", show=False),
        Binding("home", "step_to(0)", "First server", show=False),
        Binding("end", "step_to(-1)", "Last server", show=False),
    ]

    DEFAULT_CSS = """
    ServerStrip {
        scrollbar-size-horizontal: 1;
    }
    """

    def __init__(self) -> None:
        super().__init__()
        self.columns: list[ServerColumn] = []
        self.column_width = MIN_COLUMN

    async def add_servers(self, servers: list[ServerView]) -> None:
        new = [ServerColumn(server) for server in servers]
        self.columns += new
        await self.mount_all(new)
        self.share_width()

    def on_resize(self) -> None:
        self.share_width()

    def watch_scroll_x(self, old: float, new: float) -> None:
        super().watch_scroll_x(old, new)
        self.cull()

    def cull(self) -> None:
        """Lay out the panels of the columns near the view (its page of columns and the pages
        either side, so stepping within a page changes nothing); the others show a header."""
        shown = [column for column in self.columns if column.display]
        per_page = max(self.size.width // self.column_width, 1)
        page = int(self.scroll_x // self.column_width) // per_page
        for index, column in enumerate(shown):
            column.body.display = abs(index // per_page - page) <= 1

    def share_width(self) -> None:
        """Columns share the width, never narrower than MIN_COLUMN: one server gets long
        sparklines, and many scroll sideways."""
        shown = [column for column in self.columns if column.display]
        if not shown or not self.size.width:
            return
        self.column_width = max(MIN_COLUMN, self.size.width // len(shown))
        for column in shown:
            column.styles.width = self.column_width
        self.cull()

    def on_screen(self) -> list[ServerColumn]:
        """The columns in view: the only ones worth redrawing."""
        return [column for column in self.columns if self.screen.can_view_partial(column)]

    def _column_width(self) -> int:
        shown = [column for column in self.columns if column.display]
        return (shown[0].outer_size.width or 1) if shown else 1

    def action_step(self, direction: int) -> None:
        width = self._column_width()
        self.scroll_to(x=(round(self.scroll_x / width) + direction) * width, animate=False)

    def action_step_to(self, index: int) -> None:
        x = self.max_scroll_x if index < 0 else index * self._column_width()
        self.scroll_to(x=x, animate=False)
