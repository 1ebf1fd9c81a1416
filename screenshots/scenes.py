"""The screens a user sees, each set up from the real recordings in tests/fixtures at a fixed
replay position, or from a made-up fleet at a fixed time (eight GPUs, a server offline, sizes
no recording has): the README's screenshots and the snapshot tests are made from the same ones.

Nothing in a scene depends on the wall clock or the time zone (the replay is paused at a
chosen moment, a made-up fleet's clock stands still, clock times are UTC), so the same scene
draws the same screen every time.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.screen import Screen

from dltui.client.session import ClientSession
from dltui.fleet.state import Fleet
from dltui.protocol.messages import ConnectionState, Event, Sample
from dltui.protocol.samples import GpuSample, HostSample
from dltui.recording.replay import ReplaySet
from dltui.tui.app import REDRAW_HZ, DltuiApp
from dltui.tui.replay_app import ReplayApp, create_replay_app
from dltui.tui.screens.launcher import LauncherScreen
from dltui.tui.view import MonitorView
from tests.tui.synthetic import gpu_values, server_messages

os.environ["TZ"] = "UTC"  # the clock times a screen shows ('as of 13:43:10')
time.tzset()

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
H200 = FIXTURES / "h200x2-kernels.dlrec"
CPU = FIXTURES / "cpu-kernels.dlrec"
H200_MODELS = FIXTURES / "h200-models.dlrec"
CPU_MODELS = FIXTURES / "cpu-models.dlrec"
CPU_WHATIF = FIXTURES / "cpu-whatif.dlrec"
LIGHT = "textual-light"
MADE_UP_NOW = 1_796_000_000.0
"""The made-up fleets' clock: it stands still, so their charts do too."""


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


def the_end(replay: ReplaySet) -> float:
    return replay.length


class StillTime:
    """A live fleet's clock, stopped at MADE_UP_NOW."""

    replay = False

    def now(self, source: str) -> float:
        return MADE_UP_NOW

    def ended(self, source: str) -> bool:
        return False


def made_up(gpus: tuple[int, ...], offline: tuple[int, ...] = ()) -> DltuiApp:
    """Servers gpu-00, gpu-01 … with these many GPUs, three minutes of samples up to
    MADE_UP_NOW; those in `offline` went away twenty seconds before it."""
    fleet = Fleet()
    start = MADE_UP_NOW - 180.0
    for n, count in enumerate(gpus):
        source = f"gpu-{n:02d}:7070"
        seconds = 160.0 if n in offline else 180.0
        for message in server_messages(f"gpu-{n:02d}", count, start, seconds):
            fleet.apply(source, message)
        if n in offline:
            fleet.apply(source, ConnectionState("offline", start + seconds, "connection reset"))
    return DltuiApp(fleet, ClientSession([]), MonitorView(StillTime()))


def sick() -> DltuiApp:
    """Eight GPUs with a link trained at x8 beside two whose GPU 1 fell off the bus a minute
    ago and ran at 92 °C against its power limit: the title counts them, the headers and the
    GPUs' readings say so in their colours."""
    app = made_up((8, 2))
    fleet = app.fleet
    last = fleet.servers["gpu-01:7070"].last_sample_time or MADE_UP_NOW
    hot = gpu_values(1, last) | {"temp": 92.0, "power": 695.0, "throttle": 0x8}
    gpus = [GpuSample(0, "ok", gpu_values(0, last)), GpuSample(1, "ok", hot)]
    fleet.apply("gpu-01:7070", Sample(10_000, last + 0.5, last + 0.5, HostSample({}), gpus))
    xid = Event(7, "xid", "critical", "XID 79: GPU has fallen off the bus", MADE_UP_NOW - 60,
                gpu=1, state="once", value=79)  # fmt: skip
    link = Event(3, "pcie_link", "warning", "PCIe link trained at gen5 x8 (of x16)",
                 MADE_UP_NOW - 120, gpu=5, value=8)  # fmt: skip
    fleet.apply("gpu-01:7070", xid)
    fleet.apply("gpu-00:7070", link)
    return app


@dataclass(frozen=True)
class Scene:
    name: str
    size: tuple[int, int]
    files: tuple[Path, ...] = ()
    moment: Callable[[ReplaySet], float] = the_end
    keys: tuple[str, ...] = ()
    screen: Callable[[DltuiApp], Screen[Any]] | None = None
    """A screen to open first (the launcher, which a replay does not offer by key)."""
    theme: str | None = None
    fleet: Callable[[], DltuiApp] | None = None
    """A made-up fleet instead of recordings."""
    readme: bool = False
    """Shown in README (made as PNG too by `make screenshots`)."""

    def app(self) -> DltuiApp:
        if self.fleet is not None:
            return self.fleet()
        return create_replay_app(list(self.files))

    async def stage(self, pilot: Pilot[None]) -> None:
        """Pause at the scene's moment, open its screen, press its keys, let it draw."""
        app = pilot.app
        assert isinstance(app, DltuiApp)
        if isinstance(app, ReplayApp):
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


def launcher(app: DltuiApp) -> LauncherScreen:
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


PAIR = (H200, CPU)
GEMM = during("8448x48000x2816", 0.5)
ALLREDUCE = during("64500000", 0.4)

README_SCENES = (
    Scene("gemm-h200", (160, 50), (H200,), GEMM, readme=True),
    Scene("allreduce-h200", (120, 45), (H200,), ALLREDUCE, readme=True),
    Scene("side-by-side", (160, 45), PAIR, readme=True),
    Scene("fill-200x60", (200, 60), PAIR, during("64500000", 0.4), readme=True),
    Scene("eight-gpus-80x24", (80, 24), fleet=lambda: made_up((8,)), readme=True),
    Scene("offline-aligned", (120, 40), fleet=lambda: made_up((4, 4), (1,)), readme=True),
    Scene("overlay", (160, 45), PAIR, ALLREDUCE, keys=("o",), readme=True),
    Scene("results", (120, 40), PAIR, keys=("v",), readme=True),
    Scene("phases", (140, 36), (H200,), keys=("v", "p"), readme=True),
    Scene("training", (120, 30), (H200_MODELS, CPU_MODELS), keys=("v",), readme=True),
    Scene("resnet50-h200", (120, 40), (H200_MODELS,), during("resnet50", 60.0), readme=True),
    Scene("detail", (140, 60), (H200,), ALLREDUCE, keys=("d",), readme=True),
    Scene("launcher", (100, 30), PAIR, screen=launcher, readme=True),
    Scene("light-80x24", (80, 24), (H200,), GEMM, theme=LIGHT, readme=True),
    Scene("help", (120, 45), (H200,), keys=("question_mark",), readme=True),
    Scene("whatif", (120, 36), (CPU_WHATIF,), keys=("v", "w"), readme=True),
)

SCREENS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("main", {"moment": ALLREDUCE}),
    ("overlay", {"moment": ALLREDUCE, "keys": ("o",)}),
    ("results", {"keys": ("v",)}),
    ("phases", {"keys": ("v", "p")}),
    ("detail", {"moment": ALLREDUCE, "keys": ("d",)}),
    ("launcher", {"screen": launcher}),
    ("help", {"keys": ("question_mark",)}),
    ("command", {"keys": ("colon", *"window 10")}),
)
"""Every screen, for the snapshot tests at the two sizes the issue names."""

SIZED_SCENES = tuple(
    Scene(f"{screen}-{w}x{h}", (w, h), PAIR, **settings)
    for screen, settings in SCREENS
    for w, h in ((80, 24), (200, 60))
)

MADE_UP: tuple[tuple[str, Callable[[], DltuiApp], tuple[str, ...]], ...] = (
    ("panels-eight-gpus", lambda: made_up((8, 2)), ("c",)),
    ("panels-scrolled", lambda: made_up((8, 2)), ("c", "pagedown")),
    ("offline", lambda: made_up((4, 4), (1,)), ()),
    ("critical", sick, ()),
)
"""Made-up fleets for what no recording shows: panels forced with eight GPUs (and scrolled),
a server gone offline, a critical event; the live footer is in each."""

MADE_UP_SCENES = tuple(
    Scene(f"{name}-{w}x{h}", (w, h), fleet=fleet, keys=keys)
    for name, fleet, keys in MADE_UP
    for w, h in ((80, 24), (200, 60))
)

SCENES = README_SCENES + SIZED_SCENES + MADE_UP_SCENES
