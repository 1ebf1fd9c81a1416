"""Length-prefixed msgpack frames: a 4-byte big-endian length, then one msgpack object.

Pure and I/O-free: `FrameDecoder.feed` takes whatever bytes arrived and returns the whole
objects they complete. The declared length is checked against the limit before any body is
buffered, so a 4-byte header cannot make us allocate what it asks for.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import msgpack

from dltui.protocol.errors import ProtocolError

MAX_FRAME = 1 << 20  # 1 MiB, the default limit on one frame's body
_HEADER = struct.Struct(">I")
HEADER_SIZE = _HEADER.size

# msgpack applies these inside one frame; no container or string may claim more than this.
_MAX_ITEMS = 65_536


def _reject_ext(code: int, data: bytes) -> Any:
    raise ProtocolError(f"msgpack ext type {code} is not part of the protocol")


def encode_frame(obj: Any, max_frame: int = MAX_FRAME) -> bytes:
    """One object as one frame. Refuses to produce a frame the peer would refuse."""
    body: bytes = msgpack.packb(obj, use_bin_type=True)
    if len(body) > max_frame:
        raise ProtocolError(f"frame of {len(body)} bytes exceeds the limit of {max_frame}")
    return _HEADER.pack(len(body)) + body


def decode_body(body: bytes) -> Any:
    """Decode one frame's body with tight limits; any failure is a ProtocolError."""
    try:
        return msgpack.unpackb(
            body,
            raw=False,
            strict_map_key=True,
            ext_hook=_reject_ext,
            max_str_len=len(body),
            max_bin_len=len(body),
            max_array_len=min(len(body), _MAX_ITEMS),
            max_map_len=min(len(body) // 2, _MAX_ITEMS),
            max_ext_len=0,
        )
    except ProtocolError:
        raise
    except (ValueError, TypeError, RecursionError, msgpack.UnpackException) as exc:
        raise ProtocolError(f"undecodable frame: {exc}") from exc


class FrameDecoder:
    """Accumulates bytes and hands out decoded objects one frame at a time.

    `pop` decodes lazily, so the frames before a bad one are all delivered before the error.
    """

    def __init__(self, max_frame: int = MAX_FRAME) -> None:
        self.max_frame = max_frame
        self._buffer = bytearray()
        self.opener: Callable[[bytes], bytes] | None = None
        """Checks and strips what a sealed frame adds to its body (see seal.py)."""
        self.overhead = 0
        """The bytes a sealed frame adds beyond `max_frame`."""
        self.last_body = b""
        """The body of the frame `pop` returned last, as it came."""

    def push(self, data: bytes) -> None:
        self._buffer += data

    def pop(self) -> tuple[bool, Any]:
        """(True, object) for the next whole frame, (False, None) when more bytes are needed."""
        if len(self._buffer) < HEADER_SIZE:
            return False, None
        (length,) = _HEADER.unpack_from(self._buffer)
        if length > self.max_frame + self.overhead:
            tag = f" (a body of {self.max_frame} and a {self.overhead}-byte tag)"
            raise ProtocolError(
                f"declared frame length {length} exceeds the limit of "
                f"{self.max_frame + self.overhead}{tag if self.overhead else ''}"
            )
        end = HEADER_SIZE + length
        if len(self._buffer) < end:
            return False, None
        body = bytes(self._buffer[HEADER_SIZE:end])
        del self._buffer[:end]
        if self.opener is not None:
            body = self.opener(body)
        self.last_body = body
        return True, decode_body(body)

    def feed(self, data: bytes) -> list[Any]:
        """Push bytes and return every object they complete."""
        self.push(data)
        objects: list[Any] = []
        while True:
            ready, obj = self.pop()
            if not ready:
                return objects
            objects.append(obj)

    @property
    def pending(self) -> int:
        """Bytes held that do not yet make a whole frame."""
        return len(self._buffer)
