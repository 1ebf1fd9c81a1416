"""protocol/stream.py's blocking read and protocol/child.py: one loop reads frames, however the
bytes are split; a child's death in words, with the last thing it said."""

from __future__ import annotations

import io
import signal
import sys

import pytest

from dltui.protocol.child import died, spawn
from dltui.protocol.errors import ProtocolError
from dltui.protocol.framing import FrameDecoder, encode_frame
from dltui.protocol.messages import Ping, Pong
from dltui.protocol.stream import read_message
from dltui.protocol.wire import to_wire


class Trickle(io.RawIOBase):
    """A pipe that hands out at most `step` bytes a read."""

    def __init__(self, data: bytes, step: int) -> None:
        self.data, self.step = data, step

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        chunk, self.data = self.data[: self.step], self.data[self.step :]
        buffer[: len(chunk)] = chunk
        return len(chunk)


FRAMES = encode_frame(to_wire(Ping(1, 7))) + encode_frame(to_wire(Pong(7, 1.5, 2.5, 3)))


@pytest.mark.parametrize("step", range(1, len(FRAMES) + 1))
def test_the_blocking_read_gives_each_message_however_the_bytes_arrive(step: int) -> None:
    source = io.BufferedReader(Trickle(FRAMES, step), buffer_size=step)
    decoder = FrameDecoder()
    assert read_message(source, decoder) == Ping(1, 7)
    assert read_message(source, decoder) == Pong(7, 1.5, 2.5, 3)
    with pytest.raises(EOFError):
        read_message(source, decoder)


def test_a_stream_that_ends_inside_a_frame_is_a_protocol_error() -> None:
    source = io.BufferedReader(Trickle(FRAMES[:-3], 5))
    decoder = FrameDecoder()
    assert read_message(source, decoder) == Ping(1, 7)
    with pytest.raises(ProtocolError, match="in the middle of a frame"):
        read_message(source, decoder)


def test_a_death_in_words() -> None:
    assert died("the worker", -signal.SIGKILL) == (
        "the worker was killed by SIGKILL (out of host memory?)"
    )
    assert died("ssh", -signal.SIGTERM) == "ssh was killed by SIGTERM"
    assert died("the local agent", 3) == "the local agent exited with code 3"


async def test_a_child_says_its_frames_then_why_it_died_with_its_last_words() -> None:
    frame = encode_frame(to_wire(Ping(1, 9)))
    script = (
        "import sys; sys.stdout.buffer.write(bytes.fromhex(sys.argv[1])); sys.stdout.flush(); "
        "print('first words', file=sys.stderr); print('last words', file=sys.stderr); "
        "print('', file=sys.stderr); sys.exit(3)"
    )
    child = await spawn([sys.executable, "-c", script, frame.hex()], "the child")
    assert await child.receive() == Ping(1, 9)
    with pytest.raises(EOFError):
        await child.receive()
    await child.process.wait()
    await child.said_all()
    assert child.death() == "the child exited with code 3: last words"
    await child.close()


async def test_a_line_longer_than_the_limit_neither_stops_the_tail_nor_blocks_the_child() -> None:
    script = (
        "import sys; sys.stderr.write('x' * 5000 + '\\n'); print('last words', file=sys.stderr); "
        "sys.exit(3)"
    )
    said: list[str] = []
    child = await spawn([sys.executable, "-c", script], "the child", limit=1024, relay=said.append)
    with pytest.raises(EOFError):
        await child.receive()
    await child.process.wait()
    await child.said_all()
    assert "(a line too long to keep)" in child.stderr_tail
    assert child.death() == "the child exited with code 3: last words"
    assert said == list(child.stderr_tail)  # each line passed on, as kept
    await child.close()
