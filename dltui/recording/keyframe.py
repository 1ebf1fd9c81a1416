"""Keyframes: what of a recording's past still shapes the state where a stretch begins.

A replay that seeks needs the state the frames before the target built, without reading them
all: a day at 10 Hz is 864,000 samples a server. The fleet's series hold only the last two
minutes, so samples older than that shape nothing; what else the frames built is small:

- per source, the latest frame of each kind (welcome, pong, error, …);
- per source, the link frames that decide its link state: the one that began the current
  state (its time is "since when") and the one before it (so that it reads as a change), the
  latest with a clock offset, and the latest;
- every job frame (progress that starts a case, results, job ends), and each job's latest
  progress: results are what a session is for, and there are few of them; and every health
  event, for the same reasons.

The writer keeps a `StateTracker` beside the stream and writes a keyframe before every
stretch: the state records as they stand, the sample counts, and the job frames of the stretch
before (job frames only ever add up, so each keyframe holds only the new ones). A reader whose
keyframe is damaged rebuilds it with the same tracker from the records themselves.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import msgpack

from dltui.foreign_text import clean, shown
from dltui.formatting import exact_bytes
from dltui.protocol.errors import ProtocolError
from dltui.protocol.framing import decode_body
from dltui.protocol.messages import ConnectionState, Event, JobEnd, JobProgress, JobResult, Sample
from dltui.protocol.wire import from_wire, to_wire
from dltui.recording.codec import MAX_RAW
from dltui.recording.format import Record
from dltui.recording.phases import starts_case

JOB_FRAMES = (JobProgress, JobResult, JobEnd, Event)
"""Frames that only ever add up, kept whole in keyframes: jobs' and health events."""


class KeyframeError(Exception):
    """A keyframe whose payload does not decode: the reader rebuilds it from the records."""


@dataclass
class Keyframe:
    time: float | None
    """When the stretch after it begins (its first record's time); None for an empty file."""
    counts: dict[str, int] = field(default_factory=dict)
    """Samples per source before this point; every source seen, in order of first frame."""
    state: list[Record] = field(default_factory=list)
    """The frames that decide each source's state but its jobs and series, in arrival order."""
    jobs: list[Record] = field(default_factory=list)
    """Job frames of the stretch before this keyframe (all of them but superseded progress)."""


class StateTracker:
    """Watches records go by and says, at any point, what a keyframe there holds."""

    def __init__(self, start: Keyframe | None = None, jobs_before: Iterable[Record] = ()) -> None:
        self._order = 0
        self._latest: dict[tuple[str, str], tuple[int, Record]] = {}
        self._links: dict[str, dict[str, tuple[int, Record]]] = {}
        self.counts: dict[str, int] = {}
        self.last_done: dict[tuple[str, str], int] = {}
        self._jobs: list[tuple[Record, bool]] = []
        """Job frames since the last keyframe, with whether each starts a case."""
        for record in jobs_before:
            starts_case(self.last_done, record)
        if start is not None:
            for record in start.state:
                self.observe(record)
            self.counts = dict(start.counts)

    def observe(self, record: Record) -> None:
        source, message = record.source, record.message
        self.counts.setdefault(source, 0)
        self._order += 1
        entry = (self._order, record)
        if isinstance(message, Sample):
            self.counts[source] += 1
        elif isinstance(message, JOB_FRAMES):
            self._jobs.append((record, starts_case(self.last_done, record)))
        elif isinstance(message, ConnectionState):
            links = self._links.setdefault(source, {})
            last = links.get("last")
            previous = (
                last[1].message if last is not None else None
            )  # a ConnectionState, or none yet
            if not isinstance(previous, ConnectionState) or previous.state != message.state:
                if last is not None:
                    links["before"] = last  # so that `since` is applied as a change of state
                links["since"] = entry
            if message.offset is not None:
                links["offset"] = entry
            links["last"] = entry
        else:
            self._latest[(source, message.TYPE)] = entry

    def keyframe(self, time: float | None) -> Keyframe:
        """The keyframe for this point; the job frames it holds are not given again."""
        kept = dict(self._latest.values())
        for links in self._links.values():
            kept.update(links.values())
        state = [kept[order] for order in sorted(kept)]
        return Keyframe(time, dict(self.counts), state, self.take_jobs())

    def take_jobs(self) -> list[Record]:
        """The job frames since the last call, less progress a later frame supersedes."""
        latest: dict[tuple[str, str], int] = {}
        for index, (record, _) in enumerate(self._jobs):
            if isinstance(record.message, JobProgress):
                latest[(record.source, record.message.job)] = index
        kept = [
            record
            for index, (record, starts) in enumerate(self._jobs)
            if starts
            or not isinstance(record.message, JobProgress)
            or latest[(record.source, record.message.job)] == index
        ]
        self._jobs = []
        return kept


def _plain(records: list[Record]) -> list[list[Any]]:
    return [[r.received, r.source, to_wire(r.message)] for r in records]


def encode_keyframe(keyframe: Keyframe) -> bytes:
    body = msgpack.packb(
        {"time": keyframe.time, "counts": keyframe.counts, "state": _plain(keyframe.state),
         "jobs": _plain(keyframe.jobs)},
        use_bin_type=True,
    )  # fmt: skip
    return zlib.compress(body, 6)


def decode_keyframe(payload: bytes, state: bool = True) -> Keyframe:
    """A keyframe from its chunk's payload, with the wire's limits; KeyframeError if it is not
    one (its chunk checked out, so only a forged or foreign file gets here). Without `state`,
    its state records are left out (opening a file needs only the rest)."""
    stream = zlib.decompressobj()
    try:
        body = stream.decompress(payload, MAX_RAW)
        if stream.unconsumed_tail:
            raise KeyframeError(f"keyframe decompresses to more than {exact_bytes(MAX_RAW)}")
        fields = decode_body(body)
        time = fields["time"]
        return Keyframe(
            None if time is None else float(time),
            {str(source): int(count) for source, count in dict(fields["counts"]).items()},
            _records(fields["state"]) if state else [],
            _records(fields["jobs"]),
        )
    except (zlib.error, ProtocolError, KeyError, TypeError, ValueError) as exc:
        raise KeyframeError(f"keyframe does not decode: {exc}") from exc


def _records(items: Any) -> list[Record]:
    return [Record(float(received), shown(str(source)), clean(from_wire(wire)))
            for received, source, wire in items]  # fmt: skip
