"""Records inside version 2's chunks: a stretch is one deflate stream, cut into chunks.

    decompressed chunk = record*            record = body length u32 | body
    body = msgpack [received, source, message map]          any message, whole
         | msgpack [received, source, [position, value, …]] a sample, as its changes

A sample is stored as its changes against the previous sample from the same source in the same
stretch (delta.py); each stretch starts afresh, so it decodes without anything before it. The
writer flushes the stream at the end of every chunk, so a chunk holds whole records.

Limits for untrusted files: a chunk decompresses to at most `MAX_RAW` (a bomb is stopped at the
limit, not after), a record body is at most the wire's frame plus 4 KiB and is decoded with
the wire's limits and validation.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

import msgpack

from dltui.foreign_text import clean, shown
from dltui.formatting import exact_bytes
from dltui.protocol.errors import ProtocolError
from dltui.protocol.framing import decode_body
from dltui.protocol.messages import Sample
from dltui.protocol.wire import from_wire, to_wire
from dltui.recording.delta import (
    DeltaError,
    Node,
    apply_changes,
    changes,
    compile_shape,
    leaves,
    rebuild,
)
from dltui.recording.format import MAX_RECORD, Record

LEVEL = 6
"""zlib's default: measured smaller than zstd's level 3 on these records, and fast enough
(benchmarks/recording_speed.py)."""
_WBITS = -15  # raw deflate: the chunk's CRC already guards the stream
_LENGTH = struct.Struct(">I")
MAX_RAW = 16 << 20
"""A chunk decompresses to at most this; the writer cuts chunks at a quarter of it."""


class ChunkError(Exception):
    """A chunk that does not decompress or holds a record that does not decode."""


class StretchEncoder:
    """The writer's side of one stretch: records in, chunk payloads out."""

    def __init__(self) -> None:
        self._stream = zlib.compressobj(LEVEL, zlib.DEFLATED, _WBITS)
        self._bases: dict[str, tuple[list[Any], list[Any]]] = {}
        self.pending = 0
        """Bytes of records added since the last `flush`, before compression."""

    def add(self, record: Record) -> bytes:
        """Take one record; returns whatever compressed bytes are ready (often none)."""
        raw = self.encode(record)
        self.pending += len(raw)
        return self._stream.compress(raw)

    def encode(self, record: Record) -> bytes:
        """One record as the stream holds it before compression (a sample as its changes)."""
        wire = to_wire(record.message)
        stored: Any = wire
        if isinstance(record.message, Sample):
            shape, values = leaves(wire)
            base = self._bases.get(record.source)
            if base is not None and base[0] == shape:
                stored = changes(base[1], values)
            self._bases[record.source] = (shape, values)
        body: bytes = msgpack.packb([record.received, record.source, stored], use_bin_type=True)
        return _LENGTH.pack(len(body)) + body

    def flush(self) -> bytes:
        """The rest of the chunk's bytes; the stream goes on in the next chunk."""
        self.pending = 0
        return self._stream.flush(zlib.Z_SYNC_FLUSH)


class StretchDecoder:
    """The reader's side of one stretch: chunk payloads in order, records out."""

    def __init__(self) -> None:
        self._stream = zlib.decompressobj(_WBITS)
        self._bases: dict[str, tuple[Node, list[Any]]] = {}
        """Per source: the shape of its last sample, compiled, and its leaf values."""

    def chunk(self, payload: bytes) -> tuple[list[Record], list[str]]:
        """The records of the stretch's next chunk, and why any record in it was dropped.

        ChunkError when the chunk itself is not what the writer wrote: then the rest of the
        stretch cannot be read either, its stream depends on this chunk."""
        try:
            raw = self._stream.decompress(payload, MAX_RAW)
        except zlib.error as exc:
            raise ChunkError(f"chunk does not decompress: {exc}") from exc
        if self._stream.unconsumed_tail:
            raise ChunkError(f"chunk decompresses to more than {exact_bytes(MAX_RAW)}")
        records: list[Record] = []
        dropped: list[str] = []
        offset = 0
        while offset < len(raw):
            if len(raw) - offset < _LENGTH.size:
                raise ChunkError("chunk ends inside a record")
            (length,) = _LENGTH.unpack_from(raw, offset)
            body = raw[offset + _LENGTH.size : offset + _LENGTH.size + length]
            if length > MAX_RECORD or len(body) < length:
                raise ChunkError(f"record of implausible length {length}")
            offset += _LENGTH.size + length
            try:
                records.append(self._record(body))
            except (ProtocolError, DeltaError, TypeError, ValueError) as exc:
                dropped.append(f"record does not decode: {exc}")
        return records, dropped

    def _record(self, body: bytes) -> Record:
        received, source, stored = decode_body(body)
        received, source = float(received), shown(str(source))
        try:
            if type(stored) is list:
                base = self._bases.get(source)
                if base is None:
                    raise DeltaError(f"sample changes from {source} without a whole sample first")
                values = apply_changes(base[1], stored)
                wire = rebuild(base[0], values)
                self._bases[source] = (base[0], values)
            else:
                wire = stored
            message = clean(from_wire(wire))
            if isinstance(message, Sample) and type(stored) is dict:
                self._bases[source] = (compile_shape(stored), leaves(stored)[1])
        except (ProtocolError, DeltaError):
            self._bases.pop(source, None)  # what follows from this source has no base
            raise
        return Record(received, source, message)
