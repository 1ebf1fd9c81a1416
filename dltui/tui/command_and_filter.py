"""The two lines a user types in above the footer: `:` commands and `/` the server filter.

Both are made on first use on the app's first screen, so every screen built on the server strip
(the replay's too) gets them; enter keeps what was typed (and runs a command), escape closes
the line (and clears the filter). The commands' words are in `command_line.py`.
"""

from __future__ import annotations

from textual import events
from textual.reactive import reactive
from textual.widgets import Input

from dltui.tui.app_part import AppPart
from dltui.tui.command_line import CommandError, CommandLine, parse


class CommandAndFilter(AppPart):
    """The `:` command line and the `/` filter of `DltuiApp`."""

    name_filter: reactive[str] = reactive("", init=False)
    """Show only the servers whose name or address holds this (any case)."""

    _filtered: tuple[str, int] = ("", 0)
    """The filter and the number of columns it was last applied to."""

    # --- the command line --------------------------------------------------------------------

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
        if self.check_action(command.action, ()) is False:  # its key is not offered here either
            self.notify(f":{command.name}: {self.why_not(command.action)}", severity="warning",
                        markup=False)  # fmt: skip
            return
        if command.argument or command.name in ("compact", "panels"):
            await self.run_action(f"{command.action}({argument!r})")
        else:
            await self.run_action(command.action)

    # --- the filter --------------------------------------------------------------------------

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
        self._summary = self._fleet_summary()

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
