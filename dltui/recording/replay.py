"""Replaying recordings into fleet state: play, pause, speed, seek, next benchmark phase.

Several recordings play on one clock, the seconds since each one began, so last month's 8-GPU
server and today's two 4-GPU servers run side by side from their own starts. Each server is
named by its recording ("monday/gpu-01:7070"). Headless: the TUI drives it from a timer.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path

from dltui.fleet.state import Fleet
from dltui.protocol.messages import JobProgress
from dltui.recording.format import Record
from dltui.recording.reader import RecordingReader

SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)


@dataclass
class Track:
    """One recording: its records, and how far into them the replay has applied."""

    name: str
    records: list[Record]
    applied: int = 0
    times: list[float] = field(default_factory=list)
    """Seconds from the recording's start to each record."""
    damage: str | None = None
    """What damage in the file cost, said to the user when the replay opens."""

    def __post_init__(self) -> None:
        start = self.records[0].received if self.records else 0.0
        self.times = [record.received - start for record in self.records]

    @property
    def length(self) -> float:
        return self.times[-1] if self.times else 0.0


def load_tracks(paths: list[Path]) -> list[Track]:
    """A track per file, named by the file's stem (made unique where two stems agree)."""
    tracks = []
    for path in paths:
        name = path.stem
        while any(track.name == name for track in tracks):
            name += "'"
        reader = RecordingReader(path)
        tracks.append(Track(name, reader.read_all(), damage=reader.damage_report()))
    return tracks


class ReplaySet:
    def __init__(self, tracks: list[Track], fleet: Fleet) -> None:
        self.tracks = tracks
        self.fleet = fleet
        self.position = 0.0
        self.speed = 1.0
        self.playing = True
        self.length = max((track.length for track in tracks), default=0.0)
        for track in tracks:  # every server has its column from the start
            for record in track.records:
                fleet.add(self.source(track, record))
        self.seek(0.0)

    @staticmethod
    def source(track: Track, record: Record) -> str:
        return f"{track.name}/{record.source}"

    def tick(self, wall_seconds: float) -> None:
        """Move on by `wall_seconds` of real time at the current speed."""
        if self.playing:
            self.seek(self.position + wall_seconds * self.speed)

    def seek(self, position: float) -> None:
        position = min(max(position, 0.0), self.length)
        if position < self.position:
            self.fleet.reset()
            for track in self.tracks:
                track.applied = 0
        for track in self.tracks:
            upto = bisect_right(track.times, position)
            for record in track.records[track.applied : upto]:
                self.fleet.apply(self.source(track, record), record.message)
            track.applied = max(track.applied, upto)
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

    def next_phase(self) -> bool:
        """Seek to the next benchmark case to start in any track; False when there is none."""
        starts = [
            time
            for track in self.tracks
            for time, record in zip(track.times, track.records, strict=True)
            if isinstance(record.message, JobProgress) and time > self.position + 1e-9
        ]
        if not starts:
            return False
        self.seek(min(starts))
        return True

    def phase(self) -> str | None:
        """The benchmark case running at the current position, from the fleet's jobs."""
        for server in self.fleet.servers.values():
            job = server.latest_job
            if job is not None and job.state == "running":
                return f"{server.source}: {job.label}"
        return None
