"""The same app, fed from recordings instead of agents: the frames go the same way."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Header

from dltui.fleet.state import Fleet
from dltui.recording.replay import ReplaySet, load_tracks
from dltui.tui.app import DltuiApp
from dltui.tui.widgets.position_bar import PositionBar

TICK_S = 0.1
SEEK_STEP_S = 10.0


class ReplayApp(DltuiApp):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "toggle", "Play/pause"),
        Binding("minus", "speed(-1)", "Slower", key_display="-"),
        Binding("plus,equals_sign", "speed(1)", "Faster", key_display="+"),
        Binding("left_square_bracket", "seek(-1)", "−10 s", key_display="["),
        Binding("right_square_bracket", "seek(1)", "+10 s", key_display="]"),
        Binding("n", "next_phase", "Next case"),
        *(Binding(str(d), f"jump({d})", f"{d * 10}%", show=False) for d in range(10)),
    ]

    def __init__(self, replay: ReplaySet) -> None:
        super().__init__(replay.fleet, [])
        self.replay = replay
        self.bar = PositionBar(replay)
        self._last_tick = time.monotonic()

    def compose(self) -> ComposeResult:
        yield Header()
        yield self.strip
        yield self.bar
        yield Footer()

    async def on_mount(self) -> None:
        await super().on_mount()
        self.set_interval(TICK_S, self._tick)
        for track in self.replay.tracks:
            if track.damage:
                self.notify(track.damage, severity="warning", timeout=20)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A replay is already a recording: no `r` here."""
        return action != "record" and super().check_action(action, parameters)

    def _tick(self) -> None:
        now = time.monotonic()
        self.replay.tick(now - self._last_tick)
        self._last_tick = now
        self.bar.refresh()

    def action_toggle(self) -> None:
        self.replay.toggle()
        self.bar.refresh()

    def action_speed(self, steps: int) -> None:
        self.replay.faster(steps)
        self.bar.refresh()

    def action_seek(self, direction: int) -> None:
        self.replay.seek(self.replay.position + direction * SEEK_STEP_S)
        self.bar.refresh()

    def action_jump(self, tenths: int) -> None:
        self.replay.seek(self.replay.length * tenths / 10)
        self.bar.refresh()

    def action_next_phase(self) -> None:
        if not self.replay.next_phase():
            self.notify("no later benchmark case in these recordings")
        self.bar.refresh()


def create_replay_app(paths: list[Path]) -> ReplayApp:
    """The app replaying these recordings side by side; the CLI runs it, tests drive it."""
    return ReplayApp(ReplaySet(load_tracks(paths), Fleet()))
