"""How the monitor is looked at, shared by every widget that draws a server: which clock the
charts end at (now, or where a replay is), the time window (`w`), compact or panels (`c`).

One object, held by the app and handed to the strip, its columns and their panels; a change
bumps `version`, which the panels compare with what they drew, as they do the fleet's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal, Protocol

from dltui.recording.replay import ReplaySet, Track
from dltui.tui.charts import Chart
from dltui.tui.graph import WINDOWS
from dltui.tui.layout import Layout

Mode = Literal["auto", "compact", "panels"]
RUNNING_AT_END = "running when the recording ended"
"""A job or case still running where a replay's recording stops: how it ended is not known."""


class Timebase(Protocol):
    """Where each server's charts end, and whether what is shown is a recording."""

    replay: bool

    def now(self, source: str) -> float:
        """The time on this client's clock that the server's charts end at."""
        ...

    def ended(self, source: str) -> bool:
        """Whether the server's recording has played to its end (never, live)."""
        ...


class LiveTime:
    replay = False

    def now(self, source: str) -> float:
        return time.time()

    def ended(self, source: str) -> bool:
        return False


class ReplayTime:
    """Each recording on its own clock: its start plus the replay's position."""

    replay = True

    def __init__(self, replay: ReplaySet) -> None:
        self._replay = replay
        self._tracks: dict[str, Track] = {
            track.server(source): track
            for track in replay.tracks
            for source in track.timeline.sources
        }

    def now(self, source: str) -> float:
        track = self._tracks.get(source)
        if track is None:
            return time.time()
        return track.start + min(self._replay.position, track.length)

    def ended(self, source: str) -> bool:
        track = self._tracks.get(source)
        return track is not None and self._replay.position >= track.length


@dataclass
class MonitorView:
    timebase: Timebase = field(default_factory=LiveTime)
    window: float = WINDOWS[0]
    """Seconds of history the charts show."""
    mode: Mode = "auto"
    """Compact table or panels; auto: panels where every chart gets two rows."""
    layout: Layout | None = None
    """The strip's answer for the columns on screen (None until it has a size)."""
    gpu_charts: tuple[Chart, ...] = ()
    """The GPU panels' charts: those some server on screen reports, the same in every column."""
    total_charts: tuple[Chart, ...] = ()
    """The charts of each server's totals under the compact table (or beside no GPU)."""
    gpu_row: int = 0
    """The first row of GPU panels on screen, when they do not all fit: one scroll for every
    column, so their rows stay lined up."""
    version: int = 0

    def changed(self) -> None:
        self.version += 1

    def scroll_gpus(self, rows: int) -> None:
        """Move the rows of GPU panels on screen by `rows`, within those there are."""
        layout = self.layout
        if layout is None:
            return
        last = max(layout.gpu_rows() - layout.gpu_rows_shown, 0)
        row = min(max(self.gpu_row + rows, 0), last)
        if row != self.gpu_row:
            self.gpu_row = row
            self.changed()

    def next_window(self) -> None:
        self.window = WINDOWS[(WINDOWS.index(self.window) + 1) % len(WINDOWS)]
        self.changed()
