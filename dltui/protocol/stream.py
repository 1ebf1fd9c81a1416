"""Messages over an asyncio stream pair: the one place frames meet I/O.

Both the agent and the client use it, whatever the transport (TCP, TLS, a pipe to a child
process or to ssh) underneath; child.py adds what a child process says on stderr. A process
with no event loop (the benchmark worker reading its plan) reads with `read_message`, the same
loop over a blocking pipe.
"""

from __future__ import annotations

import asyncio
import os
from io import BufferedReader
from typing import BinaryIO

from dltui.protocol.errors import ProtocolError
from dltui.protocol.framing import HEADER_SIZE, MAX_FRAME, FrameDecoder, encode_frame
from dltui.protocol.messages import Message
from dltui.protocol.seal import TAG_SIZE, Seal
from dltui.protocol.wire import from_wire, to_wire

READ_CHUNK = 64 * 1024


class MessageStream:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        max_frame: int = MAX_FRAME,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self._decoder = FrameDecoder(max_frame)
        self._outgoing: Seal | None = None

    @property
    def max_frame(self) -> int:
        """The largest frame body accepted from the peer; lowered until it has authenticated."""
        return self._decoder.max_frame

    @max_frame.setter
    def max_frame(self, limit: int) -> None:
        self._decoder.max_frame = limit

    def seal(self, outgoing: Seal, incoming: Seal) -> None:
        """Seal every frame sent from now on, and accept only sealed frames (see seal.py)."""
        self._outgoing = outgoing
        self._decoder.opener, self._decoder.overhead = incoming.open, TAG_SIZE

    @property
    def last_body(self) -> bytes:
        """The body of the frame received last (the handshake binds the seals to it)."""
        return self._decoder.last_body

    async def receive(self) -> Message:
        """The next message; EOFError when the peer closed, ProtocolError on bad input."""
        while (message := _next(self._decoder)) is None:
            _more(self._decoder, await self.reader.read(READ_CHUNK))
        return message

    def write_frame(self, frame: bytes) -> None:
        self.write_frames([frame])

    def write_frames(self, frames: list[bytes]) -> None:
        """Frames in one write (sealed one by one): one system call, one wake of the reader."""
        seal = self._outgoing
        self.writer.write(b"".join([seal.frame(f) for f in frames] if seal else frames))

    async def send(self, message: Message) -> bytes:
        """Send one message; its frame's body, as encoded (the handshake binds the seals to it)."""
        frame = encode_frame(to_wire(message))
        self.write_frame(frame)
        await self.writer.drain()
        return frame[HEADER_SIZE:]

    async def close(self) -> None:
        """Close and wait until closed. The error that ended a connection (the peer is gone:
        nothing left to flush) is dropped with its traceback: asyncio keeps it on the stream,
        and its frames would keep whoever wrote to the stream alive, in a cycle."""
        if not self.writer.is_closing():
            self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError) as exc:
            exc.__traceback__ = None


def read_message(source: BufferedReader, decoder: FrameDecoder) -> Message:
    """The next message from a blocking pipe, as `MessageStream.receive` reads a stream."""
    while (message := _next(decoder)) is None:
        _more(decoder, source.read1(READ_CHUNK))
    return message


def _next(decoder: FrameDecoder) -> Message | None:
    ready, obj = decoder.pop()
    return from_wire(obj) if ready else None


def _more(decoder: FrameDecoder, data: bytes) -> None:
    """Bytes read; at the end of the stream, EOFError (ProtocolError inside a frame)."""
    if not data:
        if decoder.pending:
            raise ProtocolError("connection closed in the middle of a frame")
        raise EOFError("connection closed")
    decoder.push(data)


def claim_stdout() -> BinaryIO:
    """This process's stdout for frames alone; fd 1 becomes stderr.

    A stray print from any library (NVML, a framework's banner) would corrupt the frame stream,
    so frames go to a private duplicate of the real stdout and everything else to stderr.
    """
    frames = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    return frames
