"""The launcher (`b`): choose servers, a plan, framework and precision; `s` returns the run to
start (the app starts it and shows its progress), escape returns nothing.

A choice the plans cannot run says why on the form, which keeps every choice to fix one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import (
    Input,
    Label,
    RadioButton,
    RadioSet,
    Select,
    SelectionList,
    Static,
)

from dltui.fleet.compare import server_names
from dltui.fleet.state import Fleet
from dltui.plans.check import PlanError
from dltui.plans.names import FRAMEWORKS, PRECISIONS
from dltui.tui.launch_plans import AUTO, BUILTINS, Choice, Launch, make_launch, size_lines
from dltui.tui.widgets.busy_note import BusyNote
from dltui.tui.widgets.fitted_footer import FittedFooter


def _plan_about(plan: str) -> str:
    """What a built-in plan runs, in words (the file's: what a plan file holds)."""
    return next((builtin.about for builtin in BUILTINS if builtin.key == plan), BUILTINS[0].about)


def _options(names: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(name, name) for name in names]


@dataclass(frozen=True)
class Start:
    """The launcher's answer: these plans on these servers."""

    launch: Launch
    sources: list[str]
    choice: Choice
    """The form as it was: the next launcher starts from it."""


class ServerChoice(SelectionList[str]):
    """The live servers, each saying in words whether it is chosen (not by colour alone)."""

    def __init__(self, names: dict[str, str], live: list[str]) -> None:
        self.names = names
        super().__init__(*((self.prompt(source, True), source, True) for source in live),
                         id="servers")  # fmt: skip

    def prompt(self, source: str, chosen: bool) -> Content:
        mark = (
            Content.styled("✓ chosen", "bold $text-success")
            if chosen
            else Content.styled("✗ not chosen", "$text-muted")
        )
        return Content(f"{self.names.get(source, source)}  ") + mark

    def on_selection_list_selected_changed(self, event: SelectionList.SelectedChanged[str]) -> None:
        chosen = set(self.selected)
        for index in range(self.option_count):
            source = self.get_option_at_index(index).value
            self.replace_option_prompt_at_index(index, self.prompt(source, source in chosen))

    def chosen(self) -> list[str]:
        """The chosen servers in the list's order, not the order they were ticked: the first
        holds rank 0 and a run across's baselines, whoever was unticked and ticked again."""
        chosen = set(self.selected)
        options = (self.get_option_at_index(i).value for i in range(self.option_count))
        return [source for source in options if source in chosen]


class PlanButton(RadioButton):
    """A plan: the chosen one shows its dot, the others none (not a colour alone)."""

    def __init__(self, label: str, value: bool, name: str) -> None:
        super().__init__(label, value=value, name=name)
        self._mark()

    def watch_value(self) -> None:
        super().watch_value()
        self._mark()

    def _mark(self) -> None:
        self.BUTTON_INNER = "●" if self.value else " "


class LauncherScreen(ModalScreen[Start | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Close"),
        Binding("s", "start", "Start"),
        Binding("x", "cancel", "Cancel"),
    ]

    DEFAULT_CSS = """
    LauncherScreen {
        & > .dialog {
            width: 100%;
            max-width: 100;
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
            width: 36;
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
        & #estimate {
            height: auto;
        }
        & #plan-file {
            margin-top: 0;
        }
        & #status {
            height: auto;
        }
        & Footer {
            dock: none;
        }
    }
    """

    DEFAULT_CLASSES = "dialog-screen"

    def __init__(self, fleet: Fleet, last: Choice | None = None) -> None:
        super().__init__()
        self.fleet = fleet
        self.last = last or Choice(BUILTINS[0].key)
        """The form's choices at first: the last run's, so that `n` runs it again as chosen."""

    def compose(self) -> ComposeResult:
        names = server_names(self.fleet)
        live = [source for source, server in self.fleet.servers.items() if server.link == "live"]
        last = self.last
        with Vertical(classes="dialog") as dialog:
            dialog.border_title = "Run a benchmark"
            with Vertical(id="form"):
                with Horizontal(id="choose"):
                    with Vertical(id="servers-box"):
                        yield Label("Servers (space: choose or not)", classes="heading")
                        yield ServerChoice(names, live)
                        if not live:
                            yield Static("no live server yet", classes="heading")
                    with Vertical(id="plans-box"):
                        yield Label("Plan", classes="heading")
                        with RadioSet(id="plans"):
                            for builtin in BUILTINS:
                                yield PlanButton(builtin.title, value=builtin.key == last.plan,
                                                 name=builtin.key)  # fmt: skip
                        yield Input(last.plan_file, placeholder="plan file, e.g. nightly.toml",
                                    id="plan-file", compact=True)  # fmt: skip
                with Horizontal(id="options"):
                    yield Label("Framework")
                    yield Select(_options(FRAMEWORKS), value=last.framework, allow_blank=False,
                                 compact=True, id="framework")  # fmt: skip
                    yield Label("Precision")
                    yield Select(_options((AUTO, *PRECISIONS)), value=last.precision,
                                 allow_blank=False, compact=True, id="precision")  # fmt: skip
                    yield Label("Device")
                    yield Select(_options((AUTO, "cuda", "cpu")), value=last.device,
                                 allow_blank=False, compact=True, id="device")  # fmt: skip
                yield Static(Content(_plan_about(last.plan)), id="about")
                yield Static("", id="estimate")
                yield BusyNote(self.fleet)
            yield Static("", id="status")
            yield FittedFooter()

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

    def on_mount(self) -> None:
        self._estimate()

    def on_radio_set_changed(self, event: RadioSet.Changed) -> None:
        self.query_one("#about", Static).update(Content(_plan_about(event.pressed.name or "")))
        self._estimate()

    def on_select_changed(self) -> None:
        self._estimate()

    def on_selection_list_selected_changed(self) -> None:
        self._estimate()

    def _estimate(self) -> None:
        """How big the chosen plan is on each chosen server, and about how long it takes."""
        names = server_names(self.fleet)
        sources = self.query_one(ServerChoice).chosen()
        inventories = {names.get(source, source): self.fleet.servers[source].inventory
                       for source in sources}  # fmt: skip
        known = {name: inventory for name, inventory in inventories.items() if inventory}
        words = ""
        if self.choice().plan != "file" or self.choice().plan_file:
            try:
                launch = make_launch(self.choice(), list(known.values()))
                words = "\n".join(size_lines(launch, known))
            except PlanError:
                words = ""
        self.query_one("#estimate", Static).update(Content.styled(words, "$text-accent"))

    def on_input_changed(self, event: Input.Changed) -> None:
        """Typing a plan file name means the plan file."""
        if event.value:
            buttons = self.query_one("#plans", RadioSet).query(RadioButton)
            for button in buttons:
                if button.name == "file":
                    button.value = True

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_start()

    async def action_cancel(self) -> None:
        """x: close without starting, and cancel a run that is going (as x does everywhere)."""
        self.dismiss(None)
        await self.app.run_action("cancel_run")

    def action_start(self) -> None:
        sources = self.query_one(ServerChoice).chosen()
        inventories = [self.fleet.servers[source].inventory for source in sources]
        try:
            launch = make_launch(self.choice(), [i for i in inventories if i is not None])
        except PlanError as exc:
            # The form keeps every choice: fix one and start again.
            self.query_one("#status", Static).update(Content.styled(str(exc), "$text-error"))
            return
        self.dismiss(Start(self.query_one(BusyNote).forced(launch), sources, self.choice()))
