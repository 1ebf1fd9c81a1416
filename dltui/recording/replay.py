"""Replaying recordings into fleet state: play, pause, speed, seek, next benchmark phase.

Several recordings play on one clock, the seconds since each one began, so last month's 8-GPU
server and today's two 4-GPU servers run side by side from their own starts. Each server is
named by its recording ("monday/gpu-01:7070"). Headless: the TUI drives it from a timer.

Playing reads each file onwards from where it is. A seek backwards, or further forwards than
the fleet's series hold, starts afresh from the stretch that begins at least `WINDOW_S` before
the target: the state its keyframe gives, then its records up to the target. The state then is
what playing from the start would have built, but for samples older than the window.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from dltui.fleet.phases import Phase
from dltui.fleet.state import SERIES_CAPACITY, Fleet
from dltui.recording.format import Record
from dltui.recording.phases import tracked
from dltui.recording.reader import damage_report, recording_names
from dltui.recording.timeline import Timeline

SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
WINDOW_S = SERIES_CAPACITY / 10.0
"""What the fleet's series hold at the default 10 Hz: two minutes."""


class Track:
    """One recording, and how far into it the replay has applied its records."""

    def __init__(self, name: str, timeline: Timeline) -> None:
        self.name = name
        self.timeline = timeline
        self._records: Iterator[Record] = iter(())
        self._next: Record | None = None
        self._latest = timeline.start
        """The newest time applied: a record's time never goes backwards (a clock that steps
        back does not reorder the file)."""
        self._phases: dict[tuple[str, str, int], Phase] | None = None

    @property
    def start(self) -> float:
        return self.timeline.start

    @property
    def length(self) -> float:
        return self.timeline.length

    @property
    def damage(self) -> str | None:
        """What damage in the file cost, as far as it has been read: said to the user."""
        return damage_report(self.timeline.path, self.timeline.damage)

    def server(self, source: str) -> str:
        return f"{self.name}/{source}"

    def reposition(self, time: float, fleet: Fleet) -> None:
        """Rebuild this recording's servers in an emptied `fleet` at `time` (absolute)."""
        if not self.timeline.stretches:
            return  # a recording of nothing
        index = self.timeline.stretch_at(time - WINDOW_S)
        state, counts = self.timeline.state(index)
        for record in state:
            fleet.apply(self.server(record.source), record.message, record.received)
        for source, count in counts.items():
            fleet.add(self.server(source)).samples += count
        self._records = self.timeline.records(index)
        self._latest = began = self.timeline.stretches[index].time
        self._next = next(self._records, None)
        self.advance(time, fleet)
        if index > 0:  # cases before the samples replayed: their readings from the whole file
            whole = self._whole_phases()
            for phase in fleet.phases.phases:
                seen = whole.get((phase.source, phase.job, phase.case))
                if seen and phase.start < began and phase.end is not None and phase.end <= time:
                    phase.readings_of(seen)

    def _whole_phases(self) -> dict[tuple[str, str, int], Phase]:
        """Every case of the recording with its readings, from one pass over the whole file,
        made on the first seek that needs it and kept: a seek replays the samples of
        WINDOW_S alone, and the per-case figures (power, per watt) must not depend on how
        the replay got to a moment."""
        if self._phases is None:
            found = tracked(self.timeline.records(0)).phases
            self._phases = {(self.server(p.source), p.job, p.case): p for p in found}
        return self._phases

    def advance(self, time: float, fleet: Fleet) -> None:
        """Apply the records up to `time` (absolute)."""
        while self._next is not None and max(self._latest, self._next.received) <= time:
            record = self._next
            self._latest = max(self._latest, record.received)
            fleet.apply(self.server(record.source), record.message, record.received)
            self._next = next(self._records, None)


def load_tracks(paths: list[Path]) -> list[Track]:
    """A track per file, named as `recording_names` says."""
    return [Track(name, Timeline(path)) for name, path in zip(recording_names(paths), paths,
                                                                 strict=True)]  # fmt: skip


class ReplaySet:
    def __init__(self, tracks: list[Track], fleet: Fleet) -> None:
        self.tracks = tracks
        self.fleet = fleet
        self.position = 0.0
        self.speed = 1.0
        self.playing = True
        self.length = max((track.length for track in tracks), default=0.0)
        for track in tracks:  # every server has its column from the start
            for source in track.timeline.sources:
                fleet.add(track.server(source))
        for track in tracks:
            track.reposition(track.start, fleet)

    def tick(self, wall_seconds: float) -> None:
        """Move on by `wall_seconds` of real time at the current speed."""
        if self.playing:
            self.seek(self.position + wall_seconds * self.speed)

    def seek(self, position: float) -> None:
        position = min(max(position, 0.0), self.length)
        if position < self.position or position - self.position > WINDOW_S:
            self.fleet.reset()
            for track in self.tracks:
                track.reposition(track.start + position, self.fleet)
        else:
            for track in self.tracks:
                track.advance(track.start + position, self.fleet)
        self.position = position
        if position >= self.length:
            self.playing = False

    def toggle(self) -> None:
        if not self.playing and self.position >= self.length:
            self.seek(0.0)  # play again from the start
        self.playing = not self.playing

    def faster(self, steps: int) -> None:
        index = SPEEDS.index(self.speed) if self.speed in SPEEDS else SPEEDS.index(1.0)
        self.speed = SPEEDS[min(max(index + steps, 0), len(SPEEDS) - 1)]

    def case_starts(self) -> list[float]:
        """Where each benchmark case begins in any track, in seconds from the start, in order."""
        return sorted(t - track.start for track in self.tracks for t in track.timeline.case_starts)

    def next_phase(self) -> bool:
        """Seek to the next benchmark case to start in any track; False when there is none."""
        later = [start for start in self.case_starts() if start > self.position + 1e-9]
        if not later:
            return False
        self.seek(later[0])
        return True

    def phase(self) -> str | None:
        """The benchmark case running at the current position, from the fleet's jobs."""
        for server in self.fleet.servers.values():
            job = server.latest_job
            if job is not None and job.state == "running":
                return f"{server.source}: {job.label}"
        return None


_CLOCK = re.compile(r"(?:(\d+):)?(\d+):(\d+(?:\.\d*)?)")
_UNITS = re.compile(r"(\d+(?:\.\d*)?)\s*(h|m|s)")


def parse_position(text: str, length: float) -> float:
    """A typed position in seconds from the start: `1:23:45`, `23:45`, `90s`, `90`, `1h30m`,
    `2m10s`, `50%`. ValueError, with what is understood, for anything else."""
    text = text.strip().lower()
    if text.endswith("%"):
        try:
            share = float(text[:-1])
        except ValueError:
            share = -1.0
        if 0 <= share <= 100:
            return length * share / 100
    elif match := _CLOCK.fullmatch(text):
        hours, minutes, seconds = match.groups()
        return int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)
    elif re.fullmatch(r"\d+(?:\.\d*)?", text):
        return float(text)
    elif re.fullmatch(r"(?:\d+(?:\.\d*)?\s*[hms]\s*)+", text):
        scale = {"h": 3600, "m": 60, "s": 1}
        return sum(float(n) * scale[unit] for n, unit in _UNITS.findall(text))
    raise ValueError(f"{text!r} is not a time: try 1:23:45, 90s, 2m10s or 50%")
