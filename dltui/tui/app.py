"""The Textual app: connections in, fleet state in the middle, columns redrawn on a timer.

Frames update the `Fleet` as they arrive (a few appends each); each column is redrawn at
`REDRAW_HZ` and only when `Fleet.version` moved, never once per sample: 64 servers at 10 Hz
would otherwise spend the event loop on painting. The columns take turns (`STAGGER`), so no
single frame paints them all and a key press never waits long for one.

From the server view a user opens the launcher (`b`), the results (`v`) and a server's detail
(`d`); a run started in the launcher is a `BenchmarkRun` that the app feeds every frame.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import ClassVar

from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Footer, Header, Input

from dltui import version
from dltui.client.connection import AgentConnection
from dltui.client.target import Target
from dltui.fleet.compare import server_names
from dltui.fleet.state import Fleet, ServerView
from dltui.formatting import fmt_bytes
from dltui.protocol.messages import Link, Message, Welcome
from dltui.recording.format import Header as RecordingHeader
from dltui.recording.writer import RecordingWriter
from dltui.tui.plans import Launch
from dltui.tui.run import BenchmarkRun
from dltui.tui.screens.detail import DetailScreen
from dltui.tui.screens.help import HelpScreen
from dltui.tui.screens.launcher import LauncherScreen
from dltui.tui.screens.results import ResultsScreen
from dltui.tui.widgets.server_header import ServerHeader
from dltui.tui.widgets.server_strip import ServerStrip

REDRAW_HZ = 2.0  # as often as a sparkline cell (0.5 s) moves on
STAGGER = 4  # columns redraw in this many turns of a redraw period
STOP_TIMEOUT = 5.0  # a local agent gets 3 s to exit before it is killed; allow for that
MAIN_SCREEN_ACTIONS = ("detail", "filter", "record", "help")
THEMES = ("textual-dark", "textual-light")
"""What `t` switches between; the palette (ctrl+p, "theme") offers every Textual theme."""


class DltuiApp(App[None]):
    """Servers side by side, one column each; the app owns the fleet and the connections."""

    TITLE = "dltui"
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses live elsewhere
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("b", "launch", "Benchmark"),
        Binding("v", "results", "Results"),
        Binding("d", "detail", "Detail"),
        Binding("x", "cancel_run", "Cancel run"),
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("t", "theme", "Theme"),
        Binding("r", "record", "Record"),
    ]

    def __init__(self, fleet: Fleet, connections: list[AgentConnection]) -> None:
        super().__init__()
        self.fleet = fleet
        self.connections = connections
        self.strip = ServerStrip()
        self._tasks: list[asyncio.Task[None]] = []
        self._drawn_version = -1
        self._turn = 0
        self.recorder: RecordingWriter | None = None
        self._summary = ""
        self._welcomes: dict[str, Welcome] = {}
        self.bench_run: BenchmarkRun | None = None
        self.name_filter = ""
        self._filtered: tuple[str, int] = ("", 0)

    def receive(self, source: str, message: Message) -> None:
        """Every frame from every connection: into the fleet, to the recorder if on, and to
        the run in progress (its campaign learns how its jobs go from them)."""
        self.fleet.apply(source, message)
        if isinstance(message, Welcome):
            self._welcomes[source] = message  # a recording started later begins with these
        if self.recorder is not None:
            self.recorder.write(source, message)
        if self.bench_run is not None:
            self.bench_run.observe(source, message)

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
        self.set_interval(1 / (REDRAW_HZ * STAGGER), self.redraw)

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
                if not self.is_running:
                    return  # the app shut down while the columns were mounted: no screen now
            self._summary = self._fleet_words()
            self._apply_filter()
        self.sub_title = self._summary + self._run_status() + self._recording_status()
        if not isinstance(self.screen, ModalScreen) and self.screen is not self.screen_stack[0]:
            return  # another screen covers the columns: they catch up when it closes
        self._turn = (self._turn + 1) % STAGGER
        for index, column in enumerate(self.strip.on_screen()):
            if index % STAGGER == self._turn:
                column.sync(fleet.version)

    def _fleet_words(self) -> str:
        """'64 servers · 60 live · 3 connecting · 1 offline': every state a server can be in."""
        fleet = self.fleet
        count = len(fleet.servers)
        words = [f"{count} server{'s' if count != 1 else ''}"]
        states = fleet.summary()
        words.append(f"{states.get('live', 0)} live")
        for state in ("connecting", "offline", "auth_failed"):
            if states.get(state):
                words.append(f"{states[state]} {state.replace('_', ' ')}")
        if self.name_filter:
            shown = sum(column.display for column in self.strip.columns)
            words.append(f"filter '{self.name_filter}': {shown} shown")
        return " · ".join(words)

    def _run_status(self) -> str:
        run = self.bench_run
        if run is None:
            return ""
        done = sum(p.fraction for p in run.progress(self.fleet)) / max(len(run.members), 1)
        how = f" {done:.0%}" if run.state == "running" else ""
        return f" · ▶ {run.words()}{how}"

    def server_names(self) -> dict[str, str]:
        return server_names(self.fleet)

    # --- filter ------------------------------------------------------------------------------

    async def action_filter(self) -> None:
        """A line above the footer; made on first use, so every screen built on the server
        strip (the replay's too) gets it."""
        found = self.screen_stack[0].query("#filter")
        if found:
            box = found.first(Input)
        else:
            box = Input(placeholder="filter servers by name (enter: keep, escape: clear)",
                        id="filter")  # fmt: skip
            await self.screen_stack[0].mount(box, after=self.strip)
        box.display = True
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.name_filter = event.value.strip()
            self._apply_filter()
            self._summary = self._fleet_words()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            event.input.display = False
            self.strip.focus()

    def on_key(self, event: events.Key) -> None:
        box = self.focused
        if event.key == "escape" and isinstance(box, Input) and box.id == "filter":
            box.value = ""
            box.display = False
            self.strip.focus()

    def _apply_filter(self) -> None:
        """Show the servers whose name or address contains the filter (any case)."""
        wanted = self.name_filter.lower()
        state = (wanted, len(self.strip.columns))
        if state == self._filtered:
            return
        self._filtered = state
        for column in self.strip.columns:
            server = column.server
            column.display = not wanted or wanted in f"{server.name} {server.source}".lower()
        self.strip.share_width()

    # --- screens -----------------------------------------------------------------------------

    def action_launch(self) -> None:
        if not self.connections:
            self.notify("benchmarks run on live agents; a replay shows what was recorded")
            return
        self.push_screen(LauncherScreen())

    def action_results(self) -> None:
        if not isinstance(self.screen, ResultsScreen):
            self.push_screen(ResultsScreen())

    def action_detail(self) -> None:
        server = self._current_server()
        if server is None:
            self.notify("no server to show yet")
            return
        self.push_screen(DetailScreen(server))

    def on_server_header_selected(self, event: ServerHeader.Selected) -> None:
        self.push_screen(DetailScreen(event.server))

    def _current_server(self) -> ServerView | None:
        """The server whose column holds the focus, else the leftmost one in view."""
        focused = self.focused
        for column in self.strip.columns:
            if focused is not None and column in focused.ancestors_with_self:
                return column.server
        shown = self.strip.on_screen()
        return shown[0].server if shown else None

    def action_theme(self) -> None:
        self.theme = (
            THEMES[(THEMES.index(self.theme) + 1) % len(THEMES)]
            if (self.theme in THEMES)
            else THEMES[0]
        )

    # --- benchmark runs ----------------------------------------------------------------------

    def start_run(self, launch: Launch, sources: list[str]) -> BenchmarkRun:
        """Start the launch's plans on these servers; RuntimeError when one is not live."""
        if self.bench_run is not None and self.bench_run.state == "running":
            raise RuntimeError("a run is already going: cancel it (x) or wait for it")
        by_source = {connection.source: connection for connection in self.connections}
        members = []
        for source in sources:
            connection = by_source.get(source)
            if connection is None or connection.state != "live" or connection.welcome is None:
                raise RuntimeError(f"{source} is not live")
            members.append(connection)
        run = BenchmarkRun(launch, members)
        self.bench_run = run
        task = asyncio.create_task(self._run(run), name="benchmark run")
        self._tasks.append(task)
        return run

    async def _run(self, run: BenchmarkRun) -> None:
        try:
            state = await run.run()
        except (ValueError, RuntimeError) as exc:  # a layout the campaign refuses
            run.state = "failed"
            run.failures.append(str(exc))
            self.notify(f"the run could not start: {exc}", severity="error")
            return
        severity = "information" if state == "done" else "warning"
        self.notify(f"{run.launch.description}: {state} — press v for the results",
                    severity=severity, timeout=10)  # fmt: skip

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys are offered only where they do something: a run to cancel, agents to run on,
        and the server view's own keys only on it."""
        if action == "cancel_run":
            return self.bench_run is not None and self.bench_run.state == "running"
        if action == "launch":
            return bool(self.connections)
        if action in MAIN_SCREEN_ACTIONS:
            return self.screen is self.screen_stack[0]
        return True

    async def action_cancel_run(self) -> None:
        if self.bench_run is not None and self.bench_run.state == "running":
            self.notify("cancelling the run …")
            await self.bench_run.cancel()

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
