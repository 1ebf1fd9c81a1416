"""Reading a recording: its header, then its records, keeping every one that checks out.

A file cut short or damaged is read up to and around the damage, and `damage` says where and
why; only a file that is not a recording at all, or from a newer format, is an error.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from dltui.recording.format import (
    MAX_HEADER,
    Damage,
    Record,
    RecordDecoder,
    RecordingError,
    decode_header,
)

CHUNK = 1 << 20


class RecordingReader:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            with open(self.path, "rb") as file:
                start = file.read(MAX_HEADER + 64)
        except OSError as exc:
            raise RecordingError(f"cannot read {self.path}: {exc.strerror}") from exc
        self.header, self._first_record = decode_header(start)
        self.damage: list[Damage] = []

    def __iter__(self) -> Iterator[Record]:
        """Every good record, in file order; `damage` is complete once this is exhausted."""
        decoder = RecordDecoder(self._first_record)
        with open(self.path, "rb") as file:
            file.seek(self._first_record)
            while chunk := file.read(CHUNK):
                yield from decoder.feed(chunk)
            yield from decoder.finish()
        self.damage = decoder.damage

    def read_all(self) -> list[Record]:
        return list(self)

    def damage_report(self) -> str | None:
        """After reading: one line saying what damage cost, or None for an intact file."""
        if not self.damage:
            return None
        return f"{self.path}: damaged, every good record kept; {describe_damage(self.damage)}"


def describe_damage(damage: list[Damage]) -> str:
    """One line for people: where each damaged stretch starts and how much it cost."""
    return "; ".join(
        f"at byte {d.offset}: {d.reason}" + (f" ({d.skipped} bytes skipped)" if d.skipped else "")
        for d in damage
    )
