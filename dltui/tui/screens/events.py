"""Every server's health events and alerts in one table (`e`), newest first: which box is sick,
since when, and whether it is over."""

from __future__ import annotations

import time
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Header

from dltui.fleet.compare import server_names
from dltui.fleet.state import Fleet
from dltui.tui.view import Timebase
from dltui.tui.widgets.fitted_footer import FittedFooter
from dltui.tui.widgets.server_flags import open_events

REDRAW_S = 0.5
COLUMNS = ("time", "server", "GPU", "severity", "kind", "state", "detail")


class EventsScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,e", "app.pop_screen", "Back")]

    def __init__(self, fleet: Fleet, timebase: Timebase) -> None:
        super().__init__()
        self.fleet = fleet
        self.timebase = timebase
        """Each server's now, live or replayed: what is open is open then."""
        self._drawn = -1

    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable(zebra_stripes=True, cursor_type="row")
        yield FittedFooter()

    def on_mount(self) -> None:
        self.sub_title = "health events and alerts"
        self.query_one(DataTable).add_columns(*COLUMNS)
        self.redraw()
        self.set_interval(REDRAW_S, self.redraw)

    def rows(self) -> list[tuple[str, ...]]:
        found = []
        names = server_names(self.fleet)
        for source, server in self.fleet.servers.items():
            # Open as the title and the header count them: conditions up, recent XIDs.
            up = {id(event) for event in open_events(server, self.timebase.now(source))}
            for event in server.events.events:
                when = event.wall - (server.offset or 0.0)
                state = "open" if id(event) in up else event.state
                found.append((when, (time.strftime("%H:%M:%S", time.localtime(when)),
                                     names[source], "host" if event.gpu is None else str(event.gpu),
                                     event.severity, event.kind, state, event.detail)))  # fmt: skip
        return [row for _, row in sorted(found, key=lambda item: -item[0])]

    def redraw(self) -> None:
        if self.fleet.version == self._drawn:
            return
        self._drawn = self.fleet.version
        table = self.query_one(DataTable)
        table.clear()
        rows = [[Text(cell) for cell in row] for row in self.rows()]  # data, never markup
        table.add_rows(rows or [("", "", "", "", "", "", "no health event or alert yet")])
