"""Reading a recording: its header, then its records, keeping every one that checks out.

A file cut short or damaged is read up to and around the damage, and `damage` says where and
why; only a file that is not a recording at all, or from a newer format, is an error. Both
versions are read: version 1 record by record, version 2 chunk by chunk (what a damaged chunk
costs is the rest of its stretch, docs/recording-format.md).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from dltui.formatting import counted
from dltui.recording.chunks import KEYFRAME, START, Chunk, Gap, read_payload, scan
from dltui.recording.codec import ChunkError, StretchDecoder
from dltui.recording.format import (
    MAGIC,
    MAX_HEADER,
    Damage,
    Record,
    RecordDecoder,
    RecordingError,
    decode_header,
)
from dltui.userfiles import FileProblem, open_regular

CHUNK = 1 << 20
MAX_RECORDING = 1 << 40
"""1 TiB: a day of 64 eight-GPU servers is a few GB. Reading streams (version 1 replays read
the file whole, but only dltui's first releases wrote version 1)."""


class RecordingReader:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            with open_regular(self.path, "recording", MAX_RECORDING) as file:
                start = file.read(MAX_HEADER + 64)
        except FileProblem as exc:
            raise RecordingError(str(exc)) from None
        except OSError as exc:
            raise RecordingError(f"cannot read {self.path}: {exc.strerror}") from None
        try:
            self.header, self.version, self.first = decode_header(start)
        except RecordingError as exc:  # said of the file, by name: several may be open
            raise RecordingError(f"{self.path}: {exc}") from None
        self.damage: list[Damage] = []

    def __iter__(self) -> Iterator[Record]:
        """Every good record, in file order; `damage` is complete once this is exhausted."""
        self.damage = []
        with open(self.path, "rb") as file:
            yield from self.records(file, self.first, self.damage)

    def records(
        self, file: BinaryIO, offset: int, damage: list[Damage], stop: int | None = None
    ) -> Iterator[Record]:
        """The records from `offset` (the first record, or a stretch's first chunk) up to the
        chunk at `stop` (default: the end); damage met on the way is added to `damage`."""
        size = os.fstat(file.fileno()).st_size if stop is None else stop
        if self.version == 1:
            yield from _records_v1(file, offset, size, damage)
        else:
            yield from _records_v2(file, offset, size, damage)

    def read_all(self) -> list[Record]:
        return list(self)

    def damage_report(self) -> str | None:
        """After reading: one line saying what damage cost, or None for an intact file."""
        return damage_report(self.path, self.damage)


Say = Callable[[str], object]
"""Where a note for a person goes (a command prints it; library code never does)."""


def is_recording(path: Path) -> bool:
    """Whether the file begins as a recording does, whatever its name; False where it cannot
    be read (whoever reads it then says why)."""
    try:
        with path.open("rb") as file:
            return file.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def recording_names(paths: Sequence[Path]) -> list[str]:
    """What each recording is called in tracks, tables and reports: its file's stem, made
    unique where two agree (monday/x.dlrec and friday/x.dlrec: x and x')."""
    names: list[str] = []
    for path in paths:
        name = path.stem
        while name in names:
            name += "'"
        names.append(name)
    return names


def in_time_order(paths: Sequence[Path]) -> list[Path]:
    """Recordings by the time each began (RecordingError for one that is not a recording)."""
    return sorted(paths, key=lambda path: RecordingReader(path).header.started)


def timed_records(path: Path, say: Say) -> Iterator[tuple[Record, float]]:
    """Every good record of one recording, with the time it began; its damage, if any, said
    through `say` at the end."""
    reader = RecordingReader(path)
    for record in reader:
        yield record, reader.header.started
    if note := reader.damage_report():
        say(note)


def _records_v1(file: BinaryIO, offset: int, size: int, damage: list[Damage]) -> Iterator[Record]:
    decoder = RecordDecoder(offset, damage=damage)
    file.seek(offset)
    left = size - offset
    while left > 0 and (chunk := file.read(min(CHUNK, left))):
        left -= len(chunk)
        yield from decoder.feed(chunk)
    yield from decoder.finish()


def _records_v2(file: BinaryIO, offset: int, size: int, damage: list[Damage]) -> Iterator[Record]:
    decoder: StretchDecoder | None = None
    lost: Damage | None = None
    """The damage whose cost is still adding up: chunks of a stretch that cannot be read."""
    for item in scan(file, offset, size):
        if isinstance(item, Gap):
            lost = Damage(item.offset, item.reason, item.end - item.offset)
            damage.append(lost)
            decoder = None
            continue
        if item.kind == KEYFRAME:
            if read_payload(file, item) is None:
                damage.append(Damage(item.offset, "keyframe checksum mismatch (no record lost)"))
            continue
        if item.kind == START:
            decoder, lost = StretchDecoder(), None
        elif decoder is None:  # DATA of a stretch whose earlier chunks are lost
            if lost is None:
                lost = Damage(item.offset, "chunk of a stretch whose start is lost")
                damage.append(lost)
            lost.skipped += item.end - item.offset
            continue
        records = _decode(file, item, decoder, damage)
        if records is None:
            decoder, lost = None, damage[-1]
            continue
        yield from records


def _decode(
    file: BinaryIO, chunk: Chunk, decoder: StretchDecoder, damage: list[Damage]
) -> list[Record] | None:
    """The chunk's records, or None (and the damage noted) when the chunk cannot be read."""
    payload = read_payload(file, chunk)
    reason = "chunk checksum mismatch" if payload is None else None
    if payload is not None:
        try:
            records, dropped = decoder.chunk(payload)
        except ChunkError as exc:
            reason = str(exc)
        else:
            damage.extend(Damage(chunk.offset, why) for why in dropped)
            return records
    damage.append(Damage(chunk.offset, f"{reason}; the rest of its stretch is lost",
                         chunk.end - chunk.offset))  # fmt: skip
    return None


def damage_report(path: Path, damage: list[Damage]) -> str | None:
    """One line saying what damage in `path` cost, or None where there was none."""
    if not damage:
        return None
    if len(damage) == 1 and damage[0].reason in TRUNCATED:  # the file ends early, no more
        begun, end = damage[0].offset, damage[0].offset + damage[0].skipped
        return (f"{path}: truncated at byte {end:,}, inside what was begun at byte {begun:,}; "
                "the frames before it are intact")  # fmt: skip
    return f"{path}: damaged, every good record kept; {describe_damage(damage)}"


TRUNCATED = {"file ends inside a chunk", "file ends inside a record"}
"""The reasons of damage that is only a file cut short (a recorder stopped mid-write)."""


SHOWN = 3
"""Byte ranges and reasons a damage line names before it counts the rest."""


def describe_damage(damage: list[Damage]) -> str:
    """One short line for people however much is damaged: how many places, where (the first
    byte ranges), how many bytes were passed over, and why."""
    ranges: list[list[int]] = []
    for start, end in sorted((d.offset, d.offset + d.skipped) for d in damage):
        if ranges and start <= ranges[-1][1]:
            ranges[-1][1] = max(ranges[-1][1], end)
        else:
            ranges.append([start, end])
    where = ", ".join(f"{a:,}–{b:,}" if b > a else f"{a:,}" for a, b in ranges[:SHOWN])
    if len(ranges) > SHOWN:
        where += f" and {len(ranges) - SHOWN:,} more"
    lost = sum(b - a for a, b in ranges)
    reasons = Counter(d.reason for d in damage).most_common()
    why = ", ".join(f"{reason} (×{count:,})" if count > 1 else reason
                    for reason, count in reasons[:SHOWN])  # fmt: skip
    if len(reasons) > SHOWN:
        why += f" and {len(reasons) - SHOWN:,} other reasons"
    places = counted(len(damage), "damaged place")
    return f"{places} at bytes {where}, {lost:,} bytes passed over: {why}"
