"""A recording opened for seeking: where each stretch begins, and the state it begins in.

Opening reads the chunk headers (13 bytes a chunk) and the keyframes, never the samples, and
decodes only the last stretch (for the end time and the newest job frames): a day-long file
opens in a fraction of a second. A keyframe that is damaged or missing is rebuilt from the
records of the stretch before it. A version 1 file is one stretch, read whole when opened.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from dltui.recording.chunks import KEYFRAME, START, Chunk, Gap, read_payload, scan
from dltui.recording.format import Damage, Record
from dltui.recording.keyframe import Keyframe, KeyframeError, StateTracker, decode_keyframe
from dltui.recording.phases import starts_case
from dltui.recording.reader import RecordingReader


@dataclass
class Stretch:
    offset: int
    """Its first chunk (version 1: the first record)."""
    time: float
    """No record of it or after it is older than this, none before it is newer."""
    keyframe: Chunk | Keyframe | None
    """The keyframe before it: its chunk in the file, or one rebuilt in memory (None: the
    empty state at the start of a file)."""
    jobs_before: int
    """How many of the timeline's job frames come before it."""


class Timeline:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.reader = RecordingReader(self.path)
        self.header = self.reader.header
        self.stretches: list[Stretch] = []
        self.jobs: list[Record] = []
        """Every job frame but superseded progress, in order: what became of each job."""
        self._damage: dict[tuple[int, str], Damage] = {}
        self._reading: list[list[Damage]] = []
        """What the reads under way have met so far."""
        with open(self.path, "rb") as file:
            heads = self._heads(file) if self.reader.version > 1 else [(self.reader.first, None)]
            for offset, chunk in heads:
                self._add(file, offset, chunk)
            self.end = self._read_last(file)
        self.start = self.stretches[0].time if self.stretches else self.header.started
        self.end = max(self.end, self.start)
        done: dict[tuple[str, str], int] = {}
        self.case_starts = [r.received for r in self.jobs if starts_case(done, r)]
        """When each benchmark case began: a progress frame with a new `done`."""

    @property
    def length(self) -> float:
        return self.end - self.start

    @property
    def damage(self) -> list[Damage]:
        """Damage met so far: when opening, then wherever records were read."""
        for found in self._reading:
            self._note(found)
        return sorted(self._damage.values(), key=lambda d: d.offset)

    def stretch_at(self, time: float) -> int:
        """The last stretch that begins at or before `time` (the first if none does)."""
        return max(bisect_right([s.time for s in self.stretches], time) - 1, 0)

    def state(self, index: int) -> tuple[list[Record], dict[str, int]]:
        """What to apply to an empty fleet for the state where stretch `index` begins (the
        frames that shape it, job frames last), and each source's samples before it."""
        stretch = self.stretches[index]
        with open(self.path, "rb") as file:
            keyframe = self._keyframe_of(file, stretch) or Keyframe(stretch.time)
        return keyframe.state + self.jobs[: stretch.jobs_before], keyframe.counts

    def records(self, index: int) -> Iterator[Record]:
        """Every record from stretch `index` to the end of the file."""
        if not self.stretches:
            return
        found: list[Damage] = []
        self._reading.append(found)
        with open(self.path, "rb") as file:
            try:
                yield from self.reader.records(file, self.stretches[index].offset, found)
            finally:
                self._reading = [other for other in self._reading if other is not found]
                self._note(found)

    def _note(self, found: list[Damage]) -> None:
        for damage in found:  # the same damage is met again by every read that passes it
            known = self._damage.setdefault((damage.offset, damage.reason), damage)
            known.skipped = max(known.skipped, damage.skipped)

    def _heads(self, file: BinaryIO) -> list[tuple[int, Chunk | None]]:
        """Each stretch's first chunk, with the keyframe chunk right before it, if any."""
        heads: list[tuple[int, Chunk | None]] = []
        keyframe: Chunk | None = None
        for item in scan(file, self.reader.first, os.fstat(file.fileno()).st_size):
            if isinstance(item, Gap):
                self._note([Damage(item.offset, item.reason, item.end - item.offset)])
            elif item.kind == START:
                heads.append((item.offset, keyframe))
            keyframe = item if isinstance(item, Chunk) and item.kind == KEYFRAME else None
        return heads

    def _add(self, file: BinaryIO, offset: int, chunk: Chunk | None) -> None:
        """Index the stretch at `offset` by its keyframe, rebuilt if it is lost."""
        keyframe = self._decode(file, chunk, state=False) if chunk is not None else None
        where: Chunk | Keyframe | None = chunk
        if keyframe is None and self.stretches:
            keyframe = where = self._rebuild(file, offset)
        if keyframe is None:  # the first stretch: nothing came before it
            keyframe, where = Keyframe(self._first_time(file, offset)), None
        time = keyframe.time if keyframe.time is not None else self.header.started
        self.jobs += keyframe.jobs
        self.stretches.append(Stretch(offset, time, where, len(self.jobs)))

    def _decode(self, file: BinaryIO, chunk: Chunk, state: bool = True) -> Keyframe | None:
        payload = read_payload(file, chunk)
        if payload is None:
            self._note([Damage(chunk.offset, "keyframe checksum mismatch (no record lost)")])
            return None
        try:
            return decode_keyframe(payload, state)
        except KeyframeError as exc:
            self._note([Damage(chunk.offset, str(exc))])
            return None

    def _keyframe_of(self, file: BinaryIO, stretch: Stretch) -> Keyframe | None:
        if isinstance(stretch.keyframe, Chunk):
            return self._decode(file, stretch.keyframe)
        return stretch.keyframe

    def _tracker(self, file: BinaryIO, stretch: Stretch) -> StateTracker:
        """A tracker standing where `stretch` begins."""
        return StateTracker(self._keyframe_of(file, stretch), self.jobs[: stretch.jobs_before])

    def _observe(
        self, file: BinaryIO, stretch: Stretch, stop: int | None
    ) -> tuple[StateTracker, float]:
        """A tracker that has seen the records from `stretch` to `stop`, and their latest time."""
        tracker = self._tracker(file, stretch)
        latest = stretch.time
        found: list[Damage] = []
        for record in self.reader.records(file, stretch.offset, found, stop):
            tracker.observe(record)
            latest = max(latest, record.received)
        self._note(found)
        return tracker, latest

    def _rebuild(self, file: BinaryIO, offset: int) -> Keyframe:
        """The keyframe of the stretch at `offset`, from the stretch before it and its records."""
        tracker, latest = self._observe(file, self.stretches[-1], offset)
        return tracker.keyframe(latest)

    def _first_time(self, file: BinaryIO, offset: int) -> float | None:
        for record in self.reader.records(file, offset, []):
            return record.received
        return None

    def _read_last(self, file: BinaryIO) -> float:
        """Read the last stretch: the file's end time; its job frames and every source."""
        self.sources: list[str] = []
        if not self.stretches:
            return self.header.started
        tracker, latest = self._observe(file, self.stretches[-1], None)
        self.jobs += tracker.take_jobs()
        self.sources = list(tracker.counts)
        return latest
