"""The Textual app: connections in, fleet state in the middle, columns redrawn on a timer.

Frames update the `Fleet` as they arrive (a few appends each); the screen is redrawn at
`REDRAW_HZ` and only when `Fleet.version` moved, never once per sample: 64 servers at 10 Hz
would otherwise spend the event loop on painting.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Header

from dltui import version
from dltui.client.connection import AgentConnection
from dltui.client.target import Target
from dltui.fleet.state import Fleet
from dltui.formatting import fmt_bytes
from dltui.protocol.messages import Link, Message, Welcome
from dltui.recording.format import Header as RecordingHeader
from dltui.recording.writer import RecordingWriter
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
        Binding("r", "record", "Record"),
    ]

    def __init__(self, fleet: Fleet, connections: list[AgentConnection]) -> None:
        super().__init__()
        self.fleet = fleet
        self.connections = connections
        self.strip = ServerStrip()
        self._tasks: list[asyncio.Task[None]] = []
        self._drawn_version = -1
        self.recorder: RecordingWriter | None = None
        self._summary = ""
        self._welcomes: dict[str, Welcome] = {}

    def receive(self, source: str, message: Message) -> None:
        """Every frame from every connection: into the fleet, and to the recorder if on."""
        self.fleet.apply(source, message)
        if isinstance(message, Welcome):
            self._welcomes[source] = message  # a recording started later begins with these
        if self.recorder is not None:
            self.recorder.write(source, message)

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
        if self.recorder is not None:
            self.recorder.close()
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
            self._summary = f"{count} server{'s' if count != 1 else ''} · {live} live"
        self.sub_title = self._summary + self._recording_status()
        for column in self.strip.on_screen():
            column.sync(fleet.version)

    def _recording_status(self) -> str:
        recorder = self.recorder
        if recorder is None:
            return ""
        return f" · ● REC {recorder.path.name} {fmt_bytes(recorder.bytes_written)}"

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_record(self) -> None:
        """Start or stop recording every frame to dltui-DATE-TIME.dlrec here."""
        if self.recorder is not None:
            recorder, self.recorder = self.recorder, None
            recorder.close()
            self.sub_title = self._summary
            self.notify(f"recorded {recorder.records} frames to {recorder.path}")
            return
        now = time.time()
        path = Path(time.strftime("dltui-%Y%m%d-%H%M%S.dlrec", time.localtime(now)))
        sources = {connection.source: connection.target.label for connection in self.connections}
        try:
            header = RecordingHeader(version(), now, sources)
            self.recorder = RecordingWriter(path, header)
        except OSError as exc:
            self.notify(f"cannot record to {path}: {exc.strerror}", severity="error")
            return
        for source, welcome in self._welcomes.items():  # who the servers are, then how they are
            self.recorder.write(source, welcome, now)
        for source, server in self.fleet.servers.items():
            link = Link(server.link, now, server.link_detail, server.rtt, server.offset)
            self.recorder.write(source, link, now)
        self.notify(f"recording to {path}")


def create_app(
    targets: list[Target], secret: bytes | None = None, rate_hz: float = 10.0
) -> DltuiApp:
    """The app for these agents; the CLI runs it, tests drive it with Pilot."""
    fleet = Fleet()
    app = DltuiApp(fleet, [])
    for target in targets:
        fleet.add(target.label)  # a column in 'connecting' before the first frame
        connection = AgentConnection(target, app.receive, secret=secret, rate_hz=rate_hz)
        app.connections.append(connection)
    return app
