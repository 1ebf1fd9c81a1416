"""The recording file's preamble and header, and version 1's records. Pure: bytes in and out.

    file    = MAGIC (8 bytes) | version u16 | header length u32 | header crc32 u32 | header
    version 1:  record*        record = body length u32 | body crc32 u32 | body
                               body   = msgpack [receive wall time, source, message map]
    version 2:  chunk*         (chunks.py, codec.py, keyframe.py)

Version 2 is what dltui writes; version 1 files (the first fixtures) are still read. In version
1 every record stands alone with its own length and checksum, so a file cut at any byte, or with
bytes flipped, loses only what is damaged: the reader keeps every record before a torn tail and
skips a record whose checksum fails. A record's body is a msgpack array of three, so its first
byte is always 0x93: eight zero bytes (length 0, and the CRC-32 of nothing is 0) are no record,
and a zeroed block is one stretch of damage, not hundreds of empty records. A recording read
from disk is untrusted input: records use the wire's limits. Described for people in
docs/recording-format.md.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

import msgpack

from dltui.errors import UsageError
from dltui.foreign_text import clean, shown
from dltui.protocol.errors import ProtocolError
from dltui.protocol.framing import MAX_FRAME, decode_body
from dltui.protocol.messages import Message
from dltui.protocol.wire import from_wire, to_wire

MAGIC = b"DLTUIREC"
VERSION = 2
"""The version written; every version up to it is read."""
_PREAMBLE = struct.Struct(">8sHII")  # magic, version, header length, header crc32
_RECORD = struct.Struct(">II")  # body length, body crc32
MAX_RECORD = MAX_FRAME + 4096  # a frame plus its time and source
_START = b"\x93"
"""msgpack's array of three, [received, source, message]: how every version 1 body begins."""
MAX_HEADER = 1 << 20


class RecordingError(UsageError):
    """Not a recording, a newer format, or a header that does not check out."""


@dataclass(frozen=True, slots=True)
class Header:
    dltui: str
    started: float
    """Wall time the recording began."""
    sources: dict[str, str] = field(default_factory=dict)
    """Source name (as in records) → what was connected to (host:port, local, a file)."""
    note: str = ""


@dataclass(frozen=True, slots=True)
class Record:
    received: float
    """The recording client's wall clock when the frame arrived."""
    source: str
    message: Message


def encode_header(header: Header, version: int = VERSION) -> bytes:
    body: bytes = msgpack.packb(
        {"dltui": header.dltui, "started": header.started, "sources": header.sources,
         "note": header.note},
        use_bin_type=True,
    )  # fmt: skip
    return _PREAMBLE.pack(MAGIC, version, len(body), zlib.crc32(body)) + body


def encode_record(record: Record) -> bytes:
    """One version 1 record."""
    body: bytes = msgpack.packb(
        [record.received, record.source, to_wire(record.message)], use_bin_type=True
    )
    return _RECORD.pack(len(body), zlib.crc32(body)) + body


def decode_header(data: bytes) -> tuple[Header, int, int]:
    """The header, the format version and the offset of what follows the header (records or
    chunks); RecordingError if this is no recording or one from a newer dltui."""
    if not data:  # a recorder that has only just created it, or one killed at once
        raise RecordingError("an empty file: no header, no frames")
    if not data.startswith(MAGIC):
        raise RecordingError("not a dltui recording (no DLTUIREC magic at the start)")
    if len(data) < _PREAMBLE.size:
        raise RecordingError(f"truncated at byte {len(data):,}, inside its header: it holds "
                             "no frames")  # fmt: skip
    _, version, length, crc = _PREAMBLE.unpack_from(data)
    # Every version begins so: the header's checksum is checked before its version is
    # believed, so that damage is not taken for a newer dltui's file.
    if length > MAX_HEADER:
        raise RecordingError(f"the recording's header is implausibly long ({length:,} bytes)")
    if len(data) < _PREAMBLE.size + length:
        raise RecordingError(f"truncated at byte {len(data):,}, inside its header (of "
                             f"{_PREAMBLE.size + length:,} bytes): it holds no frames")  # fmt: skip
    body = data[_PREAMBLE.size : _PREAMBLE.size + length]
    if zlib.crc32(body) != crc:
        raise RecordingError("the recording's header is damaged (checksum mismatch)")
    if version < 1:
        raise RecordingError(f"recording format version {version} does not exist")
    if version > VERSION:
        raise RecordingError(
            f"recording format version {version} is newer than this dltui reads ({VERSION}); "
            "upgrade dltui"
        )
    try:
        fields: Any = decode_body(body)
        header = Header(
            dltui=str(fields["dltui"]),
            started=float(fields["started"]),
            sources={str(k): str(v) for k, v in dict(fields.get("sources", {})).items()},
            note=str(fields.get("note", "")),
        )
    except (ProtocolError, KeyError, TypeError, ValueError) as exc:
        raise RecordingError(f"the recording's header does not decode: {exc}") from exc
    return header, version, _PREAMBLE.size + length


@dataclass
class Damage:
    """Where reading met damage, and what it cost, in words."""

    offset: int
    reason: str
    skipped: int = 0
    """Bytes passed over before the next good record (or the end)."""


@dataclass
class RecordDecoder:
    """Version 1's records from a byte stream fed in any pieces; damage is noted, never raised.

    After damage it looks for the next place where a record header and its checksum agree
    (a false match has odds of one in four billion) and goes on from there, so a flipped byte
    costs the record it is in, not the rest of the file.
    """

    offset: int
    """File offset of the first byte in `buffer`."""
    buffer: bytearray = field(default_factory=bytearray)
    damage: list[Damage] = field(default_factory=list)
    _lost: Damage | None = None

    def feed(self, data: bytes) -> list[Record]:
        self.buffer += data
        return self._drain(final=False)

    def finish(self) -> list[Record]:
        """At the end of the file: read what is left, and account for a torn last record."""
        return self._drain(final=True)

    def _drain(self, final: bool) -> list[Record]:
        records: list[Record] = []
        while len(self.buffer) >= (1 if final else _RECORD.size):
            if len(self.buffer) < _RECORD.size:
                self._skip(len(self.buffer), "file ends inside a record")
                break
            length, crc = _RECORD.unpack_from(self.buffer)
            end = _RECORD.size + length
            if length > MAX_RECORD:
                self._skip(1, f"implausible record length {length}")
                continue
            if length == 0 or self.buffer[_RECORD.size : _RECORD.size + 1] not in (b"", _START):
                self._skip(1, "no record here")  # zeros, say: no body starts with 0x00
                continue
            if len(self.buffer) < end and not final:
                break  # wait for the rest of this record
            if len(self.buffer) < end:
                self._skip(1, "file ends inside a record")
                continue
            body = bytes(self.buffer[_RECORD.size : end])
            if zlib.crc32(body) != crc:
                self._skip(1, "checksum mismatch")
                continue
            self._lost = None
            start = self.offset
            del self.buffer[:end]
            self.offset += end
            try:
                received, source, wire = decode_body(body)
                records.append(Record(float(received), shown(str(source)), clean(from_wire(wire))))
            except (ProtocolError, TypeError, ValueError) as exc:
                self.damage.append(Damage(start, f"record does not decode: {exc}", end))
        return records

    def _skip(self, count: int, reason: str) -> None:
        if self._lost is None:
            self._lost = Damage(self.offset, reason)
            self.damage.append(self._lost)
        self._lost.skipped += count
        del self.buffer[:count]
        self.offset += count
