"""The `g` screen of a replay: type where to go (`1:23:45`, `90s`, `2m10s`, `50%`), enter goes."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from dltui.recording.replay import parse_position


class JumpScreen(ModalScreen[float | None]):
    """Dismissed with the position typed, in seconds from the start; None when cancelled."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Cancel")]

    DEFAULT_CSS = """
    JumpScreen {
        & > .dialog {
            width: 52;
        }
        & #why {
            color: $text-warning;
            height: auto;
        }
    }
    """
    DEFAULT_CLASSES = "dialog-screen"

    def __init__(self, length: float) -> None:
        super().__init__()
        self.length = length

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog") as body:
            body.border_title = "jump to"
            yield Input(placeholder="1:23:45, 90s, 2m10s or 50%")
            yield Static("", id="why")

    @on(Input.Submitted)
    def go(self, event: Input.Submitted) -> None:
        try:
            position = parse_position(event.value, self.length)
        except ValueError as exc:
            self.query_one("#why", Static).update(Content(str(exc)))
            return
        self.dismiss(position)
