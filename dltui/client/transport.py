"""Opening a byte stream to an agent: TCP, or a local agent spawned over stdio."""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from dltui.client.target import Target
from dltui.protocol.stream import MessageStream


def failure_reason(exc: BaseException) -> str:
    """Why a connection failed, in the words a user expects rather than an errno dump."""
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (is the agent running?)"
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror})"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__


@dataclass
class Transport:
    stream: MessageStream
    close: Callable[[], Awaitable[None]]


async def open_transport(target: Target, timeout: float = 5.0) -> Transport:
    """Connect; OSError (with the reason) when the agent cannot be reached."""
    if target.kind == "local":
        return await _spawn_local()
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection(target.host, target.port, limit=2**20), timeout
    )
    stream = MessageStream(reader, writer)
    return Transport(stream, stream.close)


async def _spawn_local() -> Transport:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "dltui",
        "agent",
        "--stdio",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        limit=2**20,
    )
    assert process.stdin is not None and process.stdout is not None
    stream = MessageStream(process.stdout, process.stdin)

    async def close() -> None:
        await stream.close()  # the agent exits when its stdin closes
        try:
            await asyncio.wait_for(process.wait(), 3.0)
        except TimeoutError:
            process.kill()
            await process.wait()

    return Transport(stream, close)
