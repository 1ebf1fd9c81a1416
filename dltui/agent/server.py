"""The agent process: a sampler thread feeding any number of client sessions.

Transports: TCP (`serve_tcp`) and this process's own stdin/stdout (`serve_stdio`, for a local
spawn and for SSH). Sampling happens in the sampler's threads; this event loop only encodes each
sample once and hands the bytes to the sessions.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import logging
import signal
import socket
import sys
from collections.abc import Awaitable, Callable

from dltui.agent.jobs import Jobs
from dltui.agent.session import Session
from dltui.protocol.framing import encode_frame
from dltui.protocol.messages import Inventory, Message, Sample, to_wire
from dltui.protocol.stream import MessageStream, claim_stdout

log = logging.getLogger(__name__)

AUTH_FAILURE_DELAY_CAP = 5.0


class ConfigError(Exception):
    """The agent was asked to start in a way that is unsafe or impossible."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def stable_agent_id(listen: str) -> str:
    """Stable across restarts of the same agent, so recordings weeks apart can be matched."""
    try:
        with open("/etc/machine-id", "rb") as f:
            machine = f.read().strip()
    except OSError:
        machine = socket.gethostname().encode()
    return hashlib.sha256(machine + b"\0" + listen.encode()).hexdigest()[:12]


class Agent:
    def __init__(
        self,
        inventory: Inventory,
        rate_hz: float,
        agent_id: str,
        secret: bytes | None = None,
    ) -> None:
        self.inventory = inventory
        self.rate_hz = rate_hz
        self.agent_id = agent_id
        self.secret = secret
        self.sessions: set[Session] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._failures: dict[str, int] = {}
        self.jobs = Jobs(self.publish)

    # Called from the sampler thread.
    def on_sample(self, sample: Sample) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._broadcast, sample)

    def _broadcast(self, sample: Sample) -> None:
        if not self.sessions:
            return
        frame = encode_frame(to_wire(sample))
        for session in self.sessions:
            session.offer(sample.mono, frame)

    def publish(self, message: Message) -> None:
        """A job's frame to every client, encoded once; never dropped for a slow client."""
        frame = encode_frame(to_wire(message))
        for session in self.sessions:
            if session.ready:
                session.deliver(frame)

    async def auth_failed(self, peer: str) -> None:
        """Slow down a peer that keeps guessing: 0.1 s, 0.2 s, 0.4 s … up to 5 s a try."""
        host = peer.rsplit(":", 1)[0]
        count = self._failures[host] = self._failures.get(host, 0) + 1
        log.warning("authentication failed from %s (%d in a row)", peer, count)
        await asyncio.sleep(min(0.1 * 2 ** (count - 1), AUTH_FAILURE_DELAY_CAP))

    async def _serve(self, stream: MessageStream, peer: str) -> None:
        session = Session(self, stream, peer)
        self.sessions.add(session)
        try:
            await session.run()
        finally:
            self.sessions.discard(session)

    async def serve_tcp(self, host: str, port: int, ready: Callable[[int], None]) -> None:
        """Serve until cancelled; `ready` gets the bound port (useful with port 0)."""
        if not is_loopback(host) and self.secret is None:
            raise ConfigError(
                f"refusing to listen on {host}, which is not loopback, without --secret-file; "
                "use a secret, or reach the agent over SSH"
            )
        self._loop = asyncio.get_running_loop()

        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            address = writer.get_extra_info("peername")
            peer = f"{address[0]}:{address[1]}" if address else "?"
            await self._serve(MessageStream(reader, writer), peer)

        server = await asyncio.start_server(accept, host, port, reuse_address=True)
        ready(server.sockets[0].getsockname()[1])
        try:
            await server.serve_forever()
        finally:
            server.close()
            await self.jobs.stop()
            await self.stop_sessions("agent shutting down")

    async def stop_sessions(self, reason: str) -> None:
        await asyncio.gather(*(session.stop(reason) for session in list(self.sessions)))

    async def serve_stdio(self) -> None:
        """One session over this process's stdin/stdout; returns when the peer hangs up.

        The real stdout is moved to a private descriptor and fd 1 pointed at stderr, so a stray
        print from any library cannot corrupt the frame stream.
        """
        self._loop = loop = asyncio.get_running_loop()
        frames_out = claim_stdout()
        reader = asyncio.StreamReader(limit=2**20)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, frames_out
        )
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
        try:
            await self._serve(MessageStream(reader, writer), "stdio")
        finally:
            await self.jobs.stop()


async def run_until_signal(serve: Awaitable[None]) -> None:
    """Await `serve` until it ends by itself or SIGINT/SIGTERM cancels it."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(serve)
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    try:
        await task
    except asyncio.CancelledError:
        log.info("agent stopping on signal")
