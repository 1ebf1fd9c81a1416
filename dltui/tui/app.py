"""The Textual app: connections in, fleet state in the middle, columns redrawn on a timer.

Frames update the `Fleet` as they arrive (a few appends each); the screen is redrawn at
`REDRAW_HZ` and only when `Fleet.version` moved, never once per sample: 64 servers at 10 Hz
would otherwise spend the event loop on painting.
"""

from __future__ import annotations

import asyncio
import time
from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Header

from dltui.client.connection import AgentConnection
from dltui.client.target import Target
from dltui.fleet.state import Fleet
from dltui.protocol.messages import Link
from dltui.tui.screens.help import HelpScreen
from dltui.tui.widgets.server_strip import ServerStrip

REDRAW_HZ = 4.0
STOP_TIMEOUT = 5.0  # a local agent gets 3 s to exit before it is killed; allow for that


class DltuiApp(App[None]):
    """Servers side by side, one column each; the app owns the fleet and the connections."""

    TITLE = "dltui"
    CSS_PATH = "app.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
    ]

    def __init__(self, fleet: Fleet, connections: list[AgentConnection]) -> None:
        super().__init__()
        self.fleet = fleet
        self.connections = connections
        self.strip = ServerStrip()
        self._tasks: list[asyncio.Task[None]] = []
        self._drawn_version = -1

    def compose(self) -> ComposeResult:
        yield Header()
        yield self.strip
        yield Footer()

    async def on_mount(self) -> None:
        for connection in self.connections:
            task = asyncio.create_task(connection.run(), name=f"agent {connection.source}")
            task.add_done_callback(lambda task, source=connection.source: self._ended(source, task))
            self._tasks.append(task)
        await self.redraw()
        self.set_interval(1 / REDRAW_HZ, self.redraw)

    async def on_unmount(self) -> None:
        """Stop every connection, so a spawned local agent sees its stdin close and exits."""
        await asyncio.gather(*(connection.stop() for connection in self.connections))
        if self._tasks:
            _, pending = await asyncio.wait(self._tasks, timeout=STOP_TIMEOUT)
            for task in pending:  # asleep in a reconnect back-off
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    def _ended(self, source: str, task: asyncio.Task[None]) -> None:
        """A connection that dies of a bug must not leave its column claiming 'live'."""
        if task.cancelled() or task.exception() is None:
            return
        error = task.exception()
        self.log.error(f"connection to {source} failed", error)
        self.fleet.apply(source, Link("offline", time.time(), f"client error: {error!r}"))

    async def redraw(self) -> None:
        fleet = self.fleet
        if fleet.version != self._drawn_version:
            self._drawn_version = fleet.version
            # Servers are only ever added to a fleet, in order: the new ones are at the end.
            new = list(fleet.servers.values())[len(self.strip.columns) :]
            if new:
                await self.strip.add_servers(new)
            count, live = len(fleet.servers), fleet.summary().get("live", 0)
            self.sub_title = f"{count} server{'s' if count != 1 else ''} · {live} live"
        for column in self.strip.on_screen():
            column.sync(fleet.version)

    def action_help(self) -> None:
        self.push_screen(HelpScreen())


def create_app(
    targets: list[Target], secret: bytes | None = None, rate_hz: float = 10.0
) -> DltuiApp:
    """The app for these agents; the CLI runs it, tests drive it with Pilot."""
    fleet = Fleet()
    connections = []
    for target in targets:
        fleet.add(target.label)  # a column in 'connecting' before the first frame
        connections.append(AgentConnection(target, fleet.apply, secret=secret, rate_hz=rate_hz))
    return DltuiApp(fleet, connections)
