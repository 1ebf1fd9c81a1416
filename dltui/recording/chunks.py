"""Version 2's unit on disk: a chunk, with a checksummed header and a checksummed payload.

    chunk = kind u8 | payload length u32 | payload crc32 u32 | header crc32 u32 | payload

The header's own checksum lets a reader hop from chunk to chunk, reading 13 bytes of each, and
trust every length it hops by: opening a day-long recording reads its keyframes, not its
samples. After damage the reader looks for the next position where a header checks out (a
false match has odds of one in four billion).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

KEYFRAME = 1
"""What the state was where the next stretch begins (see keyframe.py); compressed alone."""
START = 2
"""The first chunk of a stretch: a fresh compression stream and fresh sample bases."""
DATA = 3
"""A stretch's next chunk: it continues the stream of the chunks before it."""
KINDS = (KEYFRAME, START, DATA)

_HEAD = struct.Struct(">BII")  # kind, payload length, payload crc32
_HEAD_CRC = struct.Struct(">I")
HEADER_SIZE = _HEAD.size + _HEAD_CRC.size
_HEADER = struct.Struct(">BIII")  # both at once, for parsing
MAX_PAYLOAD = 16 << 20
"""Compressed or not, no chunk holds more than this (the writer cuts chunks at a quarter)."""
_RESYNC_WINDOW = 1 << 16


def encode_chunk(kind: int, payload: bytes) -> bytes:
    head = _HEAD.pack(kind, len(payload), zlib.crc32(payload))
    return head + _HEAD_CRC.pack(zlib.crc32(head)) + payload


@dataclass(frozen=True, slots=True)
class Chunk:
    offset: int
    kind: int
    length: int
    crc: int

    @property
    def end(self) -> int:
        return self.offset + HEADER_SIZE + self.length


@dataclass(frozen=True, slots=True)
class Gap:
    """Bytes that hold no chunk: damage, or a file that ends inside a chunk."""

    offset: int
    end: int
    reason: str


_BUFFER = 1 << 20


def _parse(data: bytes | memoryview, at: int, offset: int) -> Chunk | None:
    """The chunk whose header is at `data[at:]` (file offset `offset`), if it checks out."""
    kind, length, crc, head_crc = _HEADER.unpack_from(data, at)
    if kind not in KINDS or length > MAX_PAYLOAD:
        return None
    if zlib.crc32(data[at : at + _HEAD.size]) != head_crc:
        return None
    return Chunk(offset, kind, length, crc)


def scan(file: BinaryIO, offset: int, size: int) -> Iterator[Chunk | Gap]:
    """Every chunk from `offset` to `size` (the file's length), hopping by the headers; damaged
    stretches and a torn tail come out as gaps, and the scan goes on after them."""
    view, base = memoryview(b""), offset  # file bytes from `base` on, a megabyte at a time
    while offset < size:
        if offset + HEADER_SIZE > base + len(view):
            file.seek(offset)
            view, base = memoryview(file.read(_BUFFER)), offset
        at = offset - base
        if len(view) - at < HEADER_SIZE:
            yield Gap(offset, size, "file ends inside a chunk")
            return
        chunk = _parse(view, at, offset)
        if chunk is not None and chunk.end <= size:
            yield chunk
            offset = chunk.end
        elif chunk is not None:
            yield Gap(offset, size, "file ends inside a chunk")
            return
        else:
            found = _resync(file, offset + 1, size)
            yield Gap(offset, found, "damaged chunk header")
            offset = found


def _resync(file: BinaryIO, offset: int, size: int) -> int:
    """The next offset whose header checks out and whose chunk fits in the file, or `size`."""
    while offset < size:
        file.seek(offset)
        window = file.read(_RESYNC_WINDOW + HEADER_SIZE)
        view = memoryview(window)
        for position in range(max(len(window) - HEADER_SIZE + 1, 0)):
            if view[position] in KINDS:
                chunk = _parse(view, position, offset + position)
                if chunk is not None and chunk.end <= size:
                    return chunk.offset
        offset += _RESYNC_WINDOW
    return size


def read_payload(file: BinaryIO, chunk: Chunk) -> bytes | None:
    """The chunk's payload, or None when it fails its checksum."""
    file.seek(chunk.offset + HEADER_SIZE)
    payload = file.read(chunk.length)
    if len(payload) != chunk.length or zlib.crc32(payload) != chunk.crc:
        return None
    return payload
