"""The Textual app: a client session in, fleet state in the middle, columns redrawn on a timer.

Frames update the `Fleet` as they arrive (a few appends each); each column is redrawn at
`REDRAW_HZ` and only when `Fleet.version` (or how it is viewed) moved, never once per sample:
64 servers at 10 Hz would otherwise spend the event loop on painting. The columns take turns
(`STAGGER`), so no single frame paints them all and a key press never waits long for one.

Each connection runs as a Textual worker (group "connections"), a benchmark run as another.
The fleet and, while recording, the recorder are sinks of the session. From the server view a
user opens the launcher (`b`), which returns the run to start; the run's progress (`b` again
while there is one), the results (`v`; `w` there: what-if), a server's detail (`d`), the
overlay (`o`). Every action is in the command palette (ctrl+p) and behind a `:` command
(`command_line.py`).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import ClassVar

from textual import events
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.notifications import SeverityLevel
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen
from textual.widgets import Header, Input

from dltui.client.session import WATCH_BATCH_S, ClientSession
from dltui.client.target import Target
from dltui.fleet.state import Fleet, ServerView
from dltui.formatting import fmt_bytes
from dltui.plans.check import PlanError
from dltui.recording.live import start_recording, stop_recording
from dltui.recording.writer import RecordingWriter
from dltui.tui.command_line import PLAN_WORDS, CommandError, CommandLine, parse
from dltui.tui.launch_plans import Choice, make_launch
from dltui.tui.run import BenchmarkRun
from dltui.tui.screens.detail import DetailScreen
from dltui.tui.screens.events import EventsScreen
from dltui.tui.screens.help import HelpScreen
from dltui.tui.screens.launcher import LauncherScreen, Start
from dltui.tui.screens.overlay import OverlayScreen
from dltui.tui.screens.progress import Next, ProgressScreen
from dltui.tui.screens.results import ResultsScreen
from dltui.tui.screens.topology import TopologyScreen
from dltui.tui.screens.whatif import WhatIfScreen
from dltui.tui.terminal import watch_terminal
from dltui.tui.view import Mode, MonitorView
from dltui.tui.widgets.fitted_footer import FittedFooter
from dltui.tui.widgets.server_flags import open_events
from dltui.tui.widgets.server_header import ServerHeader
from dltui.tui.widgets.server_strip import OffScreen, ServerStrip

REDRAW_HZ = 2.0  # as often as the charts' finest cells move on
STAGGER = 4  # columns redraw in this many turns of a redraw period
MAIN_SCREEN_ACTIONS = (
    "detail",
    "topology",
    "filter",
    "record",
    "help",
    "overlay",
    "window",
    "mode",
    "command_line",
)
THEMES = ("textual-dark", "textual-light")
"""What `t` switches between; the palette (ctrl+p, "theme") offers every Textual theme."""
WINDOW_WORDS = {"1m": 60.0, "10m": 600.0, "1h": 3600.0}


class DltuiApp(App[None]):
    """Servers side by side, one column each; the app owns the fleet and the session."""

    TITLE = "dltui"
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses live elsewhere
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("b", "launch", "Benchmark"),
        Binding("v", "results", "Results"),
        Binding("d,enter", "detail", "Detail", key_display="d"),
        Binding("T", "topology", "Topology", show=False),
        Binding("e", "events", "Events", show=False),
        Binding("w", "window", "Window"),
        Binding("c", "mode", "Compact/panels"),
        Binding("o", "overlay", "Overlay"),
        Binding("colon", "command_line", "Command", key_display=":"),
        Binding("x", "cancel_run", "Cancel run"),
        Binding("slash", "filter", "Filter", key_display="/", show=False),
        Binding("t", "theme", "Theme", show=False),
        Binding("r", "record", "Record", show=False),
        Binding("ctrl+c", "interrupt", show=False, priority=True),
    ]
    FOOTER_FIRST: ClassVar[tuple[str, ...]] = ("quit", "help", "cancel_run", "launch", "results",
                                               "detail", "window", "command_palette", "mode",
                                               "overlay", "command_line")  # fmt: skip
    """The footer's keys, most wanted first: what its width cannot hold goes from the end."""

    name_filter: reactive[str] = reactive("", init=False)
    """Show only the servers whose name or address holds this (any case)."""

    def __init__(
        self, fleet: Fleet, session: ClientSession, view: MonitorView | None = None
    ) -> None:
        super().__init__()
        self.fleet = fleet
        self.session = session
        self.view = view or MonitorView()
        session.subscribe(fleet.apply)
        self.strip = ServerStrip(self.view, OffScreen())
        self._drawn_version = -1
        self._turn = 0
        self.recorder: RecordingWriter | None = None
        self._summary = ""
        self._filtered: tuple[str, int] = ("", 0)
        self.bench_run: BenchmarkRun | None = None
        """The run started from the launcher, until the user starts a new one."""

    def compose(self) -> ComposeResult:
        yield Header()
        yield self.strip
        yield self.strip.off_screen
        yield FittedFooter()

    async def on_mount(self) -> None:
        if not self.is_headless and not self.is_web:
            watch_terminal(self)
        for connection in self.session.connections:
            self.run_worker(
                self.session.run_connection(connection),
                name=f"agent {connection.source}",
                group="connections",
            )
        await self.redraw()
        self.set_interval(1 / (REDRAW_HZ * STAGGER), self.redraw)

    async def on_unmount(self) -> None:
        """Close the session, so a spawned local agent sees its stdin close and exits."""
        if self.recorder is not None:
            self.recorder.close()
        await self.session.close()

    async def redraw(self) -> None:
        if not self.screen_stack or not self.strip.is_attached:
            return  # the app is closing: its screens, or the columns' place in them, are gone
        fleet = self.fleet
        if fleet.version != self._drawn_version:
            self._drawn_version = fleet.version
            # Servers are only ever added to a fleet, in order: the new ones are at the end.
            new = list(fleet.servers.values())[len(self.strip.columns) :]
            if new:
                await self.strip.add_servers(new)
                if not self.is_running:
                    return  # the app shut down while the columns were mounted: no screen now
                if self.focused is None:
                    self.strip.columns[0].focus()
            self._summary = self._fleet_words()
            self._apply_filter()
            self.strip.relayout()
        self.sub_title = self._summary + self._run_status() + self._recording_status()
        if not isinstance(self.screen, ModalScreen) and self.screen is not self.screen_stack[0]:
            return  # another screen covers the columns: they catch up when it closes
        self._turn = (self._turn + 1) % STAGGER
        drawn = (fleet.version, self.view.version)
        for index, column in enumerate(self.strip.on_screen()):
            if index % STAGGER == self._turn:
                column.sync(drawn)

    def _fleet_words(self) -> str:
        """'64 servers · 60 live · 3 connecting · 1 offline': every state a server can be in."""
        fleet = self.fleet
        count = len(fleet.servers)
        words = [f"{count} server{'s' if count != 1 else ''}"]
        states = fleet.summary()
        words.append(f"{states.get('live', 0)} live")
        for state in ("connecting", "busy", "offline", "auth_failed"):
            if states.get(state):
                words.append(f"{states[state]} {state.replace('_', ' ')}")
        words += self._danger_words()
        if self.name_filter:
            shown = sum(column.display for column in self.strip.columns)
            words.append(f"filter '{self.name_filter}': {shown} shown")
        return " · ".join(words)

    def _danger_words(self) -> list[str]:
        """'▲ 1 critical', '2 warning': the events open across servers (conditions up, XIDs
        within ONCE_OPEN_S), so a sick box is seen from the title whatever is on screen."""
        counts: Counter[str] = Counter()
        for source, server in self.fleet.servers.items():
            now = self.view.timebase.now(source)
            counts.update(event.severity for event in open_events(server, now))
        words = [f"▲ {counts['critical']} critical"] if counts["critical"] else []
        return words + ([f"{counts['warning']} warning"] if counts["warning"] else [])

    def format_title(self, title: str, sub_title: str) -> Content:
        """Textual's title, dim, with the open events' counts in their severity's colour."""
        content = super().format_title(title, sub_title)
        content = content.highlight_regex(r"▲ \d+ critical", style="bold $text-error")
        return content.highlight_regex(r"\d+ warning", style="bold $text-warning")

    def _run_status(self) -> str:
        run = self.bench_run
        if run is None:
            return ""
        done = sum(p.fraction for p in run.progress(self.fleet)) / max(len(run.members), 1)
        how = f" {done:.0%}" if run.state == "running" else ""
        return f" · ▶ {run.words()}{how}"

    # --- the palette and the command line ----------------------------------------------------

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """Every key of the screen the palette opened from, by its name, then what has no key
        there, then Textual's own (themes, keys, screenshot); each title once (Textual's
        "Theme" picks among every theme, where `t` only turns dark to light)."""
        textual = list(super().get_system_commands(screen))
        seen = {command.title for command in textual}
        for key, active in screen.active_bindings.items():
            binding = active.binding
            if not active.enabled or not binding.description or binding.description in seen:
                continue
            seen.add(binding.description)
            shown = f"key {binding.key_display or key}"
            run = partial(self.run_action, binding.action, active.node)
            words = f"{binding.tooltip} ({shown})" if binding.tooltip else shown
            yield SystemCommand(binding.description, words, run)
        if screen is self.screen_stack[0]:
            yield SystemCommand(
                "Export results", "write the results to CSV or JSON", self.action_export
            )
            yield SystemCommand(
                "Phases", "every benchmark case with its telemetry", self.action_phases
            )
            yield SystemCommand(
                "What-if", "predicted layouts of servers × GPUs", self.action_whatif
            )
        yield from textual

    async def action_command_line(self) -> None:
        """The `:` line above the footer; made on first use."""
        found = self.screen_stack[0].query("#command")
        box = found.first(CommandLine) if found else CommandLine()
        if not found:
            await self.screen_stack[0].mount(box)
        box.value = ""
        box.display = True
        box.focus()

    async def run_command(self, line: str) -> None:
        """Run a `:` line; a line that names nothing says so, with a suggestion."""
        try:
            command, argument = parse(line)
        except CommandError as exc:
            self.notify(str(exc), severity="warning", markup=False)
            return
        if not hasattr(self, f"action_{command.action}"):
            self.notify(f":{command.name} is for replays", severity="warning")
            return
        if command.argument or command.name in ("compact", "panels"):
            await self.run_action(f"{command.action}({argument!r})")
        else:
            await self.run_action(command.action)

    # --- filter ------------------------------------------------------------------------------

    async def action_filter(self) -> None:
        """A line above the footer; made on first use, so every screen built on the server
        strip (the replay's too) gets it."""
        found = self.screen_stack[0].query("#filter")
        if found:
            box = found.first(Input)
        else:
            box = Input(
                placeholder="filter servers by name (enter: keep, escape: clear)", id="filter"
            )
            await self.screen_stack[0].mount(box, after=self.strip)
        box.display = True
        box.focus()

    def action_set_filter(self, text: str) -> None:
        self.name_filter = text.strip()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.name_filter = event.value.strip()

    def watch_name_filter(self) -> None:
        self._apply_filter()
        self._summary = self._fleet_words()

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id in ("filter", "command"):
            event.input.display = False
            self._focus_columns()
        if event.input.id == "command":
            await self.run_command(event.value)

    def on_key(self, event: events.Key) -> None:
        if event.key != "escape":
            return
        box = self.focused
        if isinstance(box, Input) and box.id in ("filter", "command"):
            if box.id == "filter":
                box.value = ""
            box.display = False
            self._focus_columns()
        elif self.name_filter and self.screen is self.screen_stack[0]:
            for kept in self.screen.query("#filter").results(Input):  # kept with enter
                kept.value = ""
            self.name_filter = ""

    def action_interrupt(self) -> None:
        """Ctrl-C quits, as in every top-like tool, with the status of an interrupt."""
        self.exit(return_code=130)

    def _focus_columns(self) -> None:
        shown = self.strip.on_screen()
        (shown[0] if shown else self.strip).focus()

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

    # --- how the servers are shown -----------------------------------------------------------

    def action_window(self, words: str = "") -> None:
        """The next time window (1 min, 10 min, 1 h), or the one named."""
        if words:
            seconds = WINDOW_WORDS.get(words.strip().lower())
            if seconds is None:
                self.notify(f"window {words}: say 1m, 10m or 1h", severity="warning")
                return
            self.view.window = seconds
            self.view.changed()
        else:
            self.view.next_window()

    def action_mode(self, mode: str = "") -> None:
        """Compact (a line per GPU) or panels (charts per GPU); without a word, the other one
        than what shows."""
        layout = self.view.layout
        chosen: Mode = "compact" if mode == "compact" else "panels"
        if mode not in ("compact", "panels"):
            chosen = "panels" if layout is None or layout.compact else "compact"
        if (chosen == "compact") == self.strip.auto_compact():
            chosen = "auto"  # what the size chooses anyway: follow it again when the size changes
        self.view.mode = chosen
        self.view.changed()
        self.strip.relayout(force=True)

    def action_overlay(self) -> None:
        servers = [column.server for column in self.strip.shown()]
        self.push_screen(OverlayScreen(self.fleet, self.view, servers))

    def action_set_theme(self, name: str = "") -> None:
        wanted = {"dark": THEMES[0], "light": THEMES[1]}.get(name.strip().lower(), name.strip())
        if not wanted:
            self.action_theme()
        elif wanted in self.available_themes:
            self.theme = wanted
        else:
            self.notify(
                f"no theme '{name}': dark, light or one of ctrl+p's",
                severity="warning",
                markup=False,
            )

    # --- screens -----------------------------------------------------------------------------

    def action_launch(self) -> None:
        """The launcher's form, or the progress of the run it started."""
        if not self.session.connections:
            self.notify("benchmarks run on live agents; a replay shows what was recorded")
        elif self.bench_run is None:
            self.push_screen(LauncherScreen(self.fleet), self._start)
        else:
            self.push_screen(ProgressScreen(self.bench_run, self.fleet), self._after_progress)

    def action_bench(self, words: str = "") -> None:
        """`:bench PLAN` starts a plan on every live server; alone, the launcher."""
        if not words:
            self.action_launch()
            return
        plan = PLAN_WORDS.get(words.lower(), "file" if words.endswith(".toml") else "")
        if not plan:
            self.notify(
                f"no plan '{words}': {', '.join(PLAN_WORDS)} or a .toml file",
                severity="warning",
                markup=False,
            )
            return
        live = [s for s, server in self.fleet.servers.items() if server.link == "live"]
        inventories = [self.fleet.servers[s].inventory for s in live]
        choice = Choice(plan, plan_file=words if plan == "file" else "")
        try:
            launch = make_launch(choice, [i for i in inventories if i is not None])
        except PlanError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return
        self._start(Start(launch, live))

    def action_results(self) -> None:
        if not isinstance(self.screen, ResultsScreen):
            self.push_screen(ResultsScreen(self.fleet))

    def action_phases(self) -> None:
        self.push_screen(ResultsScreen(self.fleet, tab="phases"))

    def action_whatif(self) -> None:
        if not isinstance(self.screen, WhatIfScreen):
            self.push_screen(WhatIfScreen(self.fleet))

    def action_export(self) -> None:
        screen = ResultsScreen(self.fleet)
        self.push_screen(screen)
        self.call_after_refresh(screen.action_export)

    def action_detail(self) -> None:
        server = self._current_server()
        if server is None:
            self.notify("no server to show yet")
            return
        self.push_screen(DetailScreen(server, self.fleet, self.view))

    def action_events(self) -> None:
        self.push_screen(EventsScreen(self.fleet))

    def action_topology(self) -> None:
        server = self._current_server()
        if server is not None:
            self.push_screen(TopologyScreen(server, self.fleet))

    def on_server_header_selected(self, event: ServerHeader.Selected) -> None:
        self.push_screen(DetailScreen(event.server, self.fleet, self.view))

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

    def _start(self, start: Start | None) -> None:
        """What the launcher returned: a run to start, and its progress to show."""
        if start is None:
            return
        try:
            self.start_run(start)
        except (PlanError, RuntimeError) as exc:
            self.notify(f"the run could not start: {exc}", severity="error", markup=False)
            return
        self.action_launch()

    def _after_progress(self, next_step: Next | None) -> None:
        if next_step == "new":
            self.bench_run = None
            self.action_launch()
        elif next_step == "results":
            self.action_results()

    def start_run(self, start: Start) -> BenchmarkRun:
        """Start the launch's plans on these servers; RuntimeError when one is not live or a
        run is going, PlanError when a plan cannot run on them."""
        if self.bench_run is not None and self.bench_run.state == "running":
            raise RuntimeError("a run is already going: cancel it (x) or wait for it")
        by_source = {connection.source: connection for connection in self.session.connections}
        members = []
        for source in start.sources:
            connection = by_source.get(source)
            if connection is None or connection.state != "live" or connection.welcome is None:
                raise RuntimeError(f"{source} is not live")
            members.append(connection)
        launch = start.launch
        run = BenchmarkRun(launch.plans, members, description=launch.description)
        self.bench_run = run
        self.run_worker(self._run(run), name="benchmark run", group="benchmark")
        return run

    async def _run(self, run: BenchmarkRun) -> None:
        state = await self.session.run_plans(run)
        for screen in self.screen_stack:  # nothing left to cancel, on the main screen's footer
            screen.refresh_bindings()  # too, which shows under the run's progress
        severity: SeverityLevel = "information" if state == "done" else "warning"
        self.notify(
            f"{run.description}: {state} — press v for the results",
            severity=severity,
            timeout=10,
            markup=False,
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys are offered only where they do something: a run to cancel, agents to run on,
        and the server view's own keys only on it."""
        if action == "cancel_run":
            return self.bench_run is not None and self.bench_run.state == "running"
        if action in ("launch", "bench"):
            return bool(self.session.connections)
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
            stop_recording(self.session, recorder)
            self.sub_title = self._summary
            self.notify(f"recorded {recorder.records} frames to {recorder.path}", markup=False)
            return
        path = Path(time.strftime("dltui-%Y%m%d-%H%M%S.dlrec", time.localtime()))
        loop = asyncio.get_running_loop()

        def failed(why: str) -> None:  # on the writer's thread
            loop.call_soon_threadsafe(self._recording_failed, why)

        try:
            self.recorder = start_recording(self.session, path, failed)
        except OSError as exc:
            self.notify(f"cannot record to {path}: {exc.strerror}", severity="error", markup=False)
            return
        self.notify(f"recording to {path}", markup=False)

    def _recording_failed(self, failure: str) -> None:
        """A write failed (a full disk, a file system gone read-only): the recording stopped."""
        recorder = self.recorder
        if recorder is not None and recorder.failure == failure:
            self.recorder = None
            stop_recording(self.session, recorder)
        self.notify(failure, title="recording stopped", severity="error", timeout=60, markup=False)


def create_app(
    targets: list[Target], secret: bytes | None = None, rate_hz: float = 10.0
) -> DltuiApp:
    """The app for these agents; the CLI runs it, tests drive it with Pilot."""
    fleet = Fleet()
    session = ClientSession(targets, secret, rate_hz, WATCH_BATCH_S)
    for connection in session.connections:
        fleet.add(connection.source)  # a column in 'connecting' before the first frame
    return DltuiApp(fleet, session)
