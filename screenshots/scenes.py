"""The screens a user sees, each set up from the real recordings in tests/fixtures at a fixed
replay position: the README's screenshots and the snapshot tests are made from the same ones.

Nothing in a scene depends on the wall clock (the replay is paused at a chosen moment), so
the same scene draws the same screen every time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.screen import Screen

from dltui.recording.replay import ReplaySet
from dltui.tui.app import REDRAW_HZ
from dltui.tui.replay_app import ReplayApp, create_replay_app
from dltui.tui.screens.launcher import LauncherScreen

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
H200 = FIXTURES / "h200x2-kernels.dlrec"
CPU = FIXTURES / "cpu-kernels.dlrec"
H200_MODELS = FIXTURES / "h200-models.dlrec"
CPU_MODELS = FIXTURES / "cpu-models.dlrec"


def during(case: str, into: float) -> Callable[[ReplaySet], float]:
    """The moment `into` seconds after the last start of a case whose label holds `case`."""

    def moment(replay: ReplaySet) -> float:
        found = replay.length / 2
        replay.seek(0)
        while replay.next_phase():
            if case in (replay.phase() or ""):
                found = replay.position + into
        return found

    return moment


LIGHT = "textual-light"


def the_end(replay: ReplaySet) -> float:
    return replay.length


@dataclass(frozen=True)
class Scene:
    name: str
    files: tuple[Path, ...]
    size: tuple[int, int]
    moment: Callable[[ReplaySet], float]
    keys: tuple[str, ...] = ()
    screen: Callable[[ReplayApp], Screen[Any]] | None = None
    """A screen to open first (the launcher, which a replay does not offer by key)."""
    theme: str | None = None

    def app(self) -> ReplayApp:
        return create_replay_app(list(self.files))

    async def stage(self, pilot: Pilot[None]) -> None:
        """Pause at the scene's moment, open its screen, press its keys, let it draw."""
        app = pilot.app
        assert isinstance(app, ReplayApp)
        app.replay.playing = False
        app.replay.seek(self.moment(app.replay))
        app.replay.playing = False
        if self.theme is not None:
            app.theme = self.theme
        await app.redraw()
        if self.screen is not None:
            await app.push_screen(self.screen(app))
        for key in self.keys:
            await pilot.press(key)
        await settled(pilot)


def launcher(app: ReplayApp) -> LauncherScreen:
    return LauncherScreen(app.fleet)


async def settled(pilot: Pilot[None], tries: int = 20) -> None:
    """Until the screen stops changing over a whole redraw period: timers have drawn and
    relayouts are done, however busy the machine (a fixed pause is too short on a loaded one)."""
    before = None
    for _ in range(tries):
        await pilot.pause(1 / REDRAW_HZ + 0.1)
        await pilot.wait_for_scheduled_animations()
        now = pilot.app.export_screenshot()
        if now == before:
            return
        before = now
    raise AssertionError("the screen never settled")


SCENES = (
    Scene("gemm-h200", (H200,), (120, 45), during("8448x48000x2816", 0.5)),
    Scene("allreduce-h200", (H200,), (120, 45), during("64500000", 0.4)),
    Scene("side-by-side", (H200, CPU), (160, 45), the_end),
    Scene("results", (H200, CPU), (120, 40), the_end, keys=("v",)),
    Scene("phases", (H200,), (140, 36), the_end, keys=("v", "p")),
    Scene("training", (H200_MODELS, CPU_MODELS), (120, 30), the_end, keys=("v",)),
    Scene("resnet50-h200", (H200_MODELS,), (120, 40), during("resnet50", 60.0)),
    Scene("detail", (H200,), (140, 60), during("64500000", 0.4), keys=("d",)),
    Scene("launcher", (H200, CPU), (100, 30), the_end, screen=launcher),
    Scene("light-80x24", (H200,), (80, 24), during("8448x48000x2816", 0.5), theme=LIGHT),
    Scene("help", (H200,), (120, 45), the_end, keys=("question_mark",)),
)
