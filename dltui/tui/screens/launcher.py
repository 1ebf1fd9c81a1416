"""The launcher (`b`): choose servers, a plan, framework and precision; start; watch a
progress bar per server; cancel with `x`.

A form until a run starts, then the run's progress; closing it leaves the run going (the title
line says how it goes) and `b` brings the progress back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import (
    Footer,
    Input,
    Label,
    ProgressBar,
    RadioButton,
    RadioSet,
    Select,
    SelectionList,
    Static,
)

from dltui.plans.check import PlanError
from dltui.plans.names import FRAMEWORKS, PRECISIONS
from dltui.tui.plans import AUTO, BUILTINS, Choice, make_launch

if TYPE_CHECKING:
    from dltui.tui.app import DltuiApp

REFRESH_S = 0.25
DONE_STYLES = {"done": "$text-success", "cancelled": "$text-warning", "failed": "$text-error",
               "refused": "$text-error", "running": "$text-accent"}  # fmt: skip


def _options(names: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(name, name) for name in names]


class LauncherScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("s", "start", "Start"),
        Binding("x", "cancel_run", "Cancel run"),
        Binding("n", "new_run", "New run"),
        Binding("v", "results", "Results"),
    ]

    DEFAULT_CSS = """
    LauncherScreen {
        align: center middle;
        & > #dialog {
            width: 100%;
            max-width: 100;
            height: auto;
            max-height: 100%;
            border: round $accent;
            border-title-color: $text;
            background: $surface;
            padding: 0 1;
        }
        & .heading {
            color: $text-muted;
            text-style: bold;
        }
        & #form, #choose {
            height: auto;
        }
        & SelectionList, RadioSet {
            border: none;
            padding: 0;
            background: $surface;
            &:focus {
                border: none;
                background: $boost;
            }
        }
        & #servers-box {
            width: 30;
            height: auto;
            margin-right: 1;
        }
        & #plans-box {
            width: 1fr;
            height: auto;
        }
        & SelectionList {
            height: auto;
            max-height: 9;
        }
        & RadioSet {
            width: 100%;
        }
        & #options {
            height: auto;
            margin-top: 1;
        }
        & #options Label {
            margin: 0 1 0 0;
        }
        & #options Select {
            width: 14;
            margin-right: 1;
        }
        & #about {
            color: $text-muted;
            height: auto;
        }
        & #plan-file {
            margin-top: 0;
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

    def __init__(self) -> None:
        super().__init__()
        self._bars: dict[str, tuple[ProgressBar, Label]] = {}

    @property
    def dltui(self) -> DltuiApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        app = self.dltui
        names = app.server_names()
        live = [source for source, server in app.fleet.servers.items() if server.link == "live"]
        with Vertical(id="dialog") as dialog:
            dialog.border_title = "Run a benchmark"
            with Vertical(id="form"):
                with Horizontal(id="choose"):
                    with Vertical(id="servers-box"):
                        yield Label("Servers (space: choose)", classes="heading")
                        yield SelectionList[str](
                            *((names[source], source, True) for source in live), id="servers"
                        )
                        if not live:
                            yield Static("no live server yet", classes="heading")
                    with Vertical(id="plans-box"):
                        yield Label("Plan", classes="heading")
                        with RadioSet(id="plans"):
                            for index, builtin in enumerate(BUILTINS):
                                yield RadioButton(builtin.title, value=index == 0, name=builtin.key)
                        yield Input(placeholder="plan file, e.g. nightly.toml", id="plan-file",
                                    compact=True)  # fmt: skip
                with Horizontal(id="options"):
                    yield Label("Framework")
                    yield Select(_options(FRAMEWORKS), value="torch", allow_blank=False,
                                 compact=True, id="framework")  # fmt: skip
                    yield Label("Precision")
                    yield Select(_options((AUTO, *PRECISIONS)), value=AUTO, allow_blank=False,
                                 compact=True, id="precision")  # fmt: skip
                    yield Label("Device")
                    yield Select(_options((AUTO, "cuda", "cpu")), value=AUTO, allow_blank=False,
                                 compact=True, id="device")  # fmt: skip
                yield Static(BUILTINS[0].words, id="about")
            yield Static("", id="status")
            yield VerticalScroll(id="progress")
            yield Footer()

    def on_mount(self) -> None:
        self._show_run()
        self.set_interval(REFRESH_S, self._refresh_progress)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        running = self.dltui.bench_run is not None and self.dltui.bench_run.state == "running"
        if action == "start":
            return self.dltui.bench_run is None
        if action == "cancel_run":
            return running
        if action in ("new_run", "results"):
            return self.dltui.bench_run is not None and not running
        return True

    def choice(self) -> Choice:
        plans = self.query_one("#plans", RadioSet)
        pressed = plans.pressed_button
        return Choice(
            plan=pressed.name if pressed is not None and pressed.name else BUILTINS[0].key,
            framework=str(self.query_one("#framework", Select).value),
            precision=str(self.query_one("#precision", Select).value),
            device=str(self.query_one("#device", Select).value),
            plan_file=self.query_one("#plan-file", Input).value,
        )

    def on_radio_set_changed(self, event: RadioSet.Changed) -> None:
        builtin = next(b for b in BUILTINS if b.key == event.pressed.name)
        self.query_one("#about", Static).update(builtin.words)

    def on_input_changed(self, event: Input.Changed) -> None:
        """Typing a plan file name means the plan file."""
        if event.value:
            buttons = self.query_one("#plans", RadioSet).query(RadioButton)
            for button in buttons:
                if button.name == "file":
                    button.value = True

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_start()

    def action_start(self) -> None:
        app = self.dltui
        sources = self.query_one("#servers", SelectionList).selected
        inventories = [app.fleet.servers[s].inventory for s in sources]
        status = self.query_one("#status", Static)
        try:
            launch = make_launch(self.choice(), [i for i in inventories if i is not None])
            app.start_run(launch, list(sources))
        except (ValueError, PlanError, RuntimeError) as exc:
            # The form keeps every choice: fix one and start again.
            status.update(Content.styled(str(exc), "$text-error"))
            return
        self._show_run()

    async def action_cancel_run(self) -> None:
        await self.dltui.action_cancel_run()

    def action_new_run(self) -> None:
        self.dltui.bench_run = None
        self._show_run()

    def action_results(self) -> None:
        self.dismiss()
        self.dltui.action_results()

    def _show_run(self) -> None:
        """The form before a run, the progress once one started."""
        run = self.dltui.bench_run
        self.query_one("#form").display = run is None
        progress = self.query_one("#progress", VerticalScroll)
        progress.display = run is not None
        progress.remove_children()
        self._bars = {}
        if run is None:
            self.query_one("#status", Static).update("")
            self.refresh_bindings()
            return
        names = self.dltui.server_names()
        for member in run.members:
            bar = ProgressBar(total=1.0, show_eta=False)
            what = Label("", classes="what")
            self._bars[member.source] = (bar, what)
            row = Horizontal(Label(names.get(member.source, member.source)), bar, what,
                             classes="server-progress")  # fmt: skip
            progress.mount(row)
        self._refresh_progress()

    def _refresh_progress(self) -> None:
        run = self.dltui.bench_run
        if run is None or not self._bars:
            return
        for server in run.progress(self.dltui.fleet):
            bar, what = self._bars[server.source]
            bar.update(progress=server.fraction)
            style = DONE_STYLES.get(server.state, "$text-muted")
            words = server.label if server.state == "running" else server.state
            what.update(Content.styled(words, style))
        status = Content.styled(run.words(), DONE_STYLES.get(run.state, ""))
        if run.failures:
            status += Content.styled("\n" + "\n".join(run.failures), "$text-error")
        if run.state != "running":
            status += Content.styled("   v: results · n: new run · esc: close", "$text-muted")
        self.query_one("#status", Static).update(status)
        self.refresh_bindings()
