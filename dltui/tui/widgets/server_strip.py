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
    key's default single cell would take 40 presses to reach the next server)."""

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

    async def add_servers(self, servers: list[ServerView]) -> None:
        new = [ServerColumn(server) for server in servers]
        self.columns += new
        await self.mount_all(new)
        self.share_width()

    def on_resize(self) -> None:
        self.share_width()

    def share_width(self) -> None:
        """Columns share the width, never narrower than MIN_COLUMN: one server gets long
        sparklines, and many scroll sideways."""
        shown = [column for column in self.columns if column.display]
        if not shown or not self.size.width:
            return
        width = max(MIN_COLUMN, self.size.width // len(shown))
        for column in shown:
            column.styles.width = width

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
