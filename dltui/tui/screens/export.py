"""Asks for a file name and writes the results there, as CSV or JSON by its suffix."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from dltui.fleet.compare import Comparison, ExportError, export


class ExportScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss", "Cancel")]

    DEFAULT_CSS = """
    ExportScreen {
        & > .dialog {
            width: 70;
            max-width: 100%;
        }
        & #why {
            color: $text-error;
        }
    }
    """
    DEFAULT_CLASSES = "dialog-screen"

    def __init__(self, comparison: Comparison, baseline: str) -> None:
        super().__init__()
        self.comparison = comparison
        self.baseline = baseline

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog") as box:
            box.border_title = "Export results"
            yield Label("File (.csv or .json), written in the current folder unless a path:")
            yield Input(value="dltui-results.csv", id="path")
            yield Static("", id="why")
            yield Label("enter: write · escape: cancel", classes="muted")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        path = Path(event.value.strip()).expanduser()
        try:
            count = export(self.comparison, self.baseline, path)
        except ExportError as exc:
            self.query_one("#why", Static).update(Content(str(exc)))  # the name stays to be fixed
            return
        self.dismiss()
        self.notify(f"wrote {count} results to {path.absolute()}", markup=False)
