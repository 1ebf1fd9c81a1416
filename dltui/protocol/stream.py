"""Messages over an asyncio stream pair: the one place frames meet I/O.

Both the agent and the client use it, whatever the transport (TCP, TLS, a pipe to a child
process or to ssh) underneath.
"""

from __future__ import annotations

import asyncio
import os
from typing import BinaryIO

from dltui.protocol.errors import ProtocolError
from dltui.protocol.framing import MAX_FRAME, FrameDecoder, encode_frame
from dltui.protocol.messages import Message, from_wire, to_wire

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

    @property
    def max_frame(self) -> int:
        """The largest frame body accepted from the peer; lowered until it has authenticated."""
        return self._decoder.max_frame

    @max_frame.setter
    def max_frame(self, limit: int) -> None:
        self._decoder.max_frame = limit

    async def receive(self) -> Message:
        """The next message; EOFError when the peer closed, ProtocolError on bad input."""
        while True:
            ready, obj = self._decoder.pop()
            if ready:
                return from_wire(obj)
            data = await self.reader.read(READ_CHUNK)
            if not data:
                if self._decoder.pending:
                    raise ProtocolError("connection closed in the middle of a frame")
                raise EOFError("connection closed")
            self._decoder.push(data)

    def write_frame(self, frame: bytes) -> None:
        self.writer.write(frame)

    async def send(self, message: Message) -> None:
        self.writer.write(encode_frame(to_wire(message)))
        await self.writer.drain()

    async def close(self) -> None:
        if self.writer.is_closing():
            return
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass  # the peer is already gone; nothing left to flush


def claim_stdout() -> BinaryIO:
    """This process's stdout for frames alone; fd 1 becomes stderr.

    A stray print from any library (NVML, a framework's banner) would corrupt the frame stream,
    so frames go to a private duplicate of the real stdout and everything else to stderr.
    """
    frames = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    return frames
