"""A run's progress (`b` while there is one): a bar per server, how the run goes, `x` cancels.

Closing it leaves the run going (the title line says how it goes). Once the run has ended it
is dismissed with what the user wants next: the results (`v`) or a new run (`n`).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, ProgressBar, Static

from dltui.fleet.compare import server_names
from dltui.fleet.state import Fleet
from dltui.formatting import time_left
from dltui.tui.run import BenchmarkRun
from dltui.tui.widgets.fitted_footer import FittedFooter

Next = Literal["results", "new"]
REFRESH_S = 0.25
DONE_STYLES = {"done": "$text-success", "cancelled": "$text-warning", "failed": "$text-error",
               "refused": "$text-error", "running": "$text-accent"}  # fmt: skip


class ProgressScreen(ModalScreen[Next | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Close"),
        Binding("x", "app.cancel_run", "Cancel run"),
        Binding("n", "new_run", "New run"),
        Binding("v", "results", "Results"),
    ]

    DEFAULT_CSS = """
    ProgressScreen {
        & > .dialog {
            width: 100%;
            max-width: 100;
        }
        & #status {
            height: auto;
        }
        & #progress {
            height: auto;
            max-height: 20;
        }
        & .server-progress {
            height: 1;
        }
        & .server-progress Label {
            width: 24;
        }
        & .server-progress ProgressBar {
            width: 34;
        }
        & .server-progress .what {
            width: 1fr;
            color: $text-muted;
        }
        & Footer {
            dock: none;
        }
    }
    """
    DEFAULT_CLASSES = "dialog-screen"

    def __init__(self, run: BenchmarkRun, fleet: Fleet) -> None:
        super().__init__()
        self.run = run
        self.fleet = fleet
        self._bars: dict[str, tuple[ProgressBar, Label]] = {}

    def compose(self) -> ComposeResult:
        names = server_names(self.fleet)
        with Vertical(classes="dialog") as dialog:
            dialog.border_title = "Benchmark run"
            yield Static("", id="status")
            with VerticalScroll(id="progress"):
                for member in self.run.members:
                    bar = ProgressBar(total=1.0, show_eta=False)
                    what = Label("", classes="what")
                    self._bars[member.source] = (bar, what)
                    name = Label(Content(names.get(member.source, member.source)))
                    yield Horizontal(name, bar, what, classes="server-progress")
            yield FittedFooter()

    def on_mount(self) -> None:
        self._refresh_progress()
        self.set_interval(REFRESH_S, self._refresh_progress)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Cancel while it runs (the app says); what comes next once it has ended."""
        if action in ("new_run", "results"):
            return self.run.state != "running"
        return True

    def action_new_run(self) -> None:
        self.dismiss("new")

    def action_results(self) -> None:
        self.dismiss("results")

    def _refresh_progress(self) -> None:
        run = self.run
        for server in run.progress(self.fleet):
            bar, what = self._bars[server.source]
            bar.update(progress=server.fraction)
            style = DONE_STYLES.get(server.state, "$text-muted")
            words = server.label if server.state == "running" else server.state
            if server.state == "running" and server.remaining is not None:
                words = f"{time_left(server.remaining)} · {words}"
            what.update(Content.styled(words, style))
        status = Content.styled(run.status_line(), DONE_STYLES.get(run.state, ""))
        if run.failures:
            status += Content.styled("\n" + "\n".join(run.failures), "$text-error")
        if run.state != "running":
            status += Content.styled("\nv: results · n: new run · esc: close", "$text-muted")
        self.query_one("#status", Static).update(status)
        self.refresh_bindings()
