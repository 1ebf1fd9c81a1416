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

The app is composed of parts, a mixin each (`app_part.py`): the `:` command line and the `/`
filter (`command_and_filter.py`), a benchmark run from its start to its results
(`benchmark_runs.py`) and the recording `r` toggles (`recording_toggle.py`). Here: the columns
and their redraw, the title line, the palette, how the servers are shown and the other screens.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import ClassVar

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.screen import ModalScreen, Screen
from textual.widgets import Header

from dltui.client.session import WATCH_BATCH_S, ClientSession
from dltui.client.target import Target
from dltui.fleet.state import Fleet, ServerView
from dltui.formatting import counted
from dltui.tui.benchmark_runs import BenchmarkRuns
from dltui.tui.command_and_filter import CommandAndFilter
from dltui.tui.recording_toggle import RecordingToggle
from dltui.tui.screens.detail import DetailScreen
from dltui.tui.screens.events import EventsScreen
from dltui.tui.screens.help import HelpScreen
from dltui.tui.screens.overlay import OverlayScreen
from dltui.tui.screens.topology import TopologyScreen
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
    "overlay",
    "window",
    "mode",
    "command_line",
)
THEMES = ("textual-dark", "textual-light")
"""What `t` switches between; the palette (ctrl+p, "theme") offers every Textual theme."""
WINDOW_WORDS = {"1m": 60.0, "10m": 600.0, "1h": 3600.0}


class DltuiApp(CommandAndFilter, BenchmarkRuns, RecordingToggle, App[None]):
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
        self._summary = ""

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
        self._close_recording()
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
            self._summary = self._fleet_summary()
            self._apply_filter()
            self.strip.relayout()
        # A recording first: on a narrow terminal the title's end is cut, and it must be seen.
        self.sub_title = self._recording_status() + self._summary + self._run_status()
        if not isinstance(self.screen, ModalScreen) and self.screen is not self.screen_stack[0]:
            return  # another screen covers the columns: they catch up when it closes
        self._turn = (self._turn + 1) % STAGGER
        drawn = (fleet.version, self.view.version)
        for index, column in enumerate(self.strip.on_screen()):
            if index % STAGGER == self._turn:
                column.sync(drawn)

    def _fleet_summary(self) -> str:
        """'64 servers · 60 live · 3 connecting · 1 offline': every state a server can be in."""
        fleet = self.fleet
        count = len(fleet.servers)
        words = [counted(count, "server")]
        states = fleet.summary()
        words.append(f"{states.get('live', 0)} live")
        for state in ("connecting", "busy", "offline", "auth_failed"):
            if states.get(state):
                words.append(f"{states[state]} {state.replace('_', ' ')}")
        words += self._open_event_counts()
        if self.name_filter:
            shown = sum(column.display for column in self.strip.columns)
            words.append(f"filter '{self.name_filter}': {shown} shown")
        return " · ".join(words)

    def _open_event_counts(self) -> list[str]:
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
        content = content.highlight_regex(r"▲ \d+ critical|● REC", style="bold $text-error")
        return content.highlight_regex(r"\d+ warning", style="bold $text-warning")

    # --- the palette -------------------------------------------------------------------------

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

    def action_interrupt(self) -> None:
        """Ctrl-C quits, as in every top-like tool, with the status of an interrupt."""
        self.exit(return_code=130)

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

    def action_detail(self) -> None:
        server = self._current_server()
        if server is None:
            self.notify("no server to show yet")
            return
        self.push_screen(DetailScreen(server, self.fleet, self.view))

    def action_events(self) -> None:
        self.push_screen(EventsScreen(self.fleet, self.view.timebase))

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

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

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

    def why_not(self, action: str) -> str:
        """Why `check_action` refuses `action` now: said to a `:` command that names it."""
        if action in ("launch", "bench"):
            return "benchmarks run on live agents; a replay shows what was recorded"
        if action == "cancel_run":
            return "no run is running"
        return "it works on the main screen (esc goes back to it)"


def create_app(
    targets: list[Target], secret: bytes | None = None, rate_hz: float = 10.0
) -> DltuiApp:
    """The app for these agents; the CLI runs it, tests drive it with Pilot."""
    fleet = Fleet()
    session = ClientSession(targets, secret, rate_hz, WATCH_BATCH_S)
    for connection in session.connections:
        fleet.add(connection.source)  # a column in 'connecting' before the first frame
    return DltuiApp(fleet, session)
