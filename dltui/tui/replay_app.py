"""The same app, fed from recordings instead of agents: the frames go the same way."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Header

from dltui.client.session import ClientSession
from dltui.fleet.state import Fleet
from dltui.formatting import counted
from dltui.recording.replay import SPEEDS, ReplaySet, load_tracks, parse_position
from dltui.tui.app import DltuiApp
from dltui.tui.screens.jump import JumpScreen
from dltui.tui.view import MonitorView, ReplayTime
from dltui.tui.widgets.fitted_footer import FittedFooter
from dltui.tui.widgets.position_bar import PositionBar

TICK_S = 0.1
SEEK_STEP_S = 10.0


class ReplayApp(DltuiApp):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "play_pause", "Play", tooltip="Play or pause"),
        Binding("minus", "speed(-1)", "Slower", key_display="-"),
        Binding("plus,equals_sign", "speed(1)", "Faster", key_display="+"),
        Binding("left_square_bracket", "seek(-1)", "−10s", key_display="["),
        Binding("right_square_bracket", "seek(1)", "+10s", key_display="]"),
        Binding("g", "jump_to", "Jump", tooltip="Jump to a time"),
        Binding("n", "next_phase", "Next", tooltip="The next benchmark case"),
        *(Binding(str(d), f"jump({d})", f"{d * 10}%", show=False) for d in range(10)),
    ]
    FOOTER_FIRST = ("quit", "help", "play_pause", "speed", "seek", "jump_to", "next_phase",
                    *DltuiApp.FOOTER_FIRST[2:])  # fmt: skip
    """A replay's own keys come right after quit and help: at 80 columns they all show."""

    def __init__(self, replay: ReplaySet) -> None:
        super().__init__(replay.fleet, ClientSession([]), MonitorView(ReplayTime(replay)))
        self.replay = replay
        self.bar = PositionBar(replay)
        self._last_tick = time.monotonic()
        self._told: dict[str, str | None] = {}
        """What each track's damage notice said, so a new finding is told once."""

    def compose(self) -> ComposeResult:
        yield Header()
        yield self.strip
        yield self.strip.off_screen
        yield self.bar
        yield FittedFooter()

    async def on_mount(self) -> None:
        await super().on_mount()
        self.set_interval(TICK_S, self._tick)
        self._tell_damage()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A replay is already a recording: no `r` here."""
        return action != "record" and super().check_action(action, parameters)

    def why_not(self, action: str) -> str:
        return "a replay is already a recording" if action == "record" else super().why_not(action)

    def _fleet_summary(self) -> str:
        """'2 servers · replay 1×': a recording, never 'live'."""
        count = len(self.fleet.servers)
        replay = self.replay
        if replay.position >= replay.length:
            how = "replay ended"
        elif not replay.playing:
            how = "replay paused"
        else:
            how = f"replay {replay.speed:g}×"
        words = [counted(count, "server"), how]
        if self.name_filter:
            shown = sum(column.display for column in self.strip.columns)
            words.append(f"filter '{self.name_filter}': {shown} shown")
        return " · ".join(words)

    def _tick(self) -> None:
        now = time.monotonic()
        self.replay.tick(now - self._last_tick)
        self._last_tick = now
        self._moved()

    def _moved(self) -> None:
        self.bar.refresh()
        self._summary = self._fleet_summary()
        self._tell_damage()

    def _tell_damage(self) -> None:
        """Damage is found as the file is read: say what it cost when it is."""
        for track in self.replay.tracks:
            damage = track.damage
            if damage != self._told.get(track.name) and damage is not None:
                self.notify(damage, severity="warning", timeout=20, markup=False)
            self._told[track.name] = damage

    def action_play_pause(self) -> None:
        self.replay.toggle()
        self._moved()

    def action_speed(self, steps: int) -> None:
        self.replay.faster(steps)
        self._moved()

    def action_seek(self, direction: int) -> None:
        self.replay.seek(self.replay.position + direction * SEEK_STEP_S)
        self._moved()

    def action_jump(self, tenths: int) -> None:
        self.replay.seek(self.replay.length * tenths / 10)
        self._moved()

    def action_set_speed(self, words: str) -> None:
        """`:speed 4`: one of the replay's speeds."""
        try:
            speed = float(words.rstrip("×x"))
        except ValueError:
            speed = 0.0
        if speed not in SPEEDS:
            self.notify(f"speed {words}: one of {', '.join(f'{s:g}' for s in SPEEDS)}",
                        severity="warning")  # fmt: skip
            return
        self.replay.speed = speed
        self._moved()

    def action_jump_to_text(self, words: str) -> None:
        """`:jump 1:23`, `:jump 50%`."""
        try:
            self.replay.seek(parse_position(words, self.replay.length))
        except ValueError as exc:
            self.notify(str(exc), severity="warning", markup=False)
        self._moved()

    def action_jump_to(self) -> None:
        """Ask for a time (`1:23:45`, `90s`, `50%`) and go there."""

        def go(position: float | None) -> None:
            if position is not None:
                self.replay.seek(position)
                self._moved()

        self.push_screen(JumpScreen(self.replay.length), go)

    def action_next_phase(self) -> None:
        if not self.replay.next_phase():
            self.notify("no later benchmark case in these recordings")
        self._moved()


def create_replay_app(paths: list[Path]) -> ReplayApp:
    """The app replaying these recordings side by side; the CLI runs it, tests drive it."""
    return ReplayApp(ReplaySet(load_tracks(paths), Fleet()))
