"""The agent process: a sampler thread feeding any number of client connections.

Transports: TCP or TLS (`serve_tcp`) and this process's own stdin/stdout (`serve_stdio`, for a
local spawn and for SSH). Sampling happens in the sampler's threads; this event loop only
encodes each sample once and hands the bytes to the connections.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import logging
import os
import signal
import socket
import stat
import sys
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from dltui.agent.admission import Admission, Waiting
from dltui.agent.alerts import Rule
from dltui.agent.client_connection import ClientConnection
from dltui.agent.config import ConfigFileError
from dltui.agent.demand import SamplingDemand
from dltui.agent.events import EventLog
from dltui.agent.jobs import Jobs
from dltui.agent.listener import accept_forever, listening_socket, requires_client_certificate
from dltui.agent.occupancy import Occupancy
from dltui.agent.results import ResultBoard
from dltui.agent.throttle import AuthThrottle
from dltui.protocol.framing import encode_frame
from dltui.protocol.inventory import Inventory
from dltui.protocol.messages import Event, Message, Sample
from dltui.protocol.stream import MessageStream, claim_stdout
from dltui.protocol.wire import to_wire

if TYPE_CHECKING:  # ssl is loaded only where TLS is served (commands/agent.py)
    import ssl

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 128
"""Clients logged in at once; one more is told the agent is busy and closed. Connections that
have not logged in have a budget of their own (admission.py)."""


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
        tls: ssl.SSLContext | None = None,
        data_dirs: tuple[str, ...] = (),
        rules: list[Rule] | None = None,
        sampling: Callable[[float], object] | None = None,
    ) -> None:
        """`sampling` is told the rate the clients and scrapers need, whenever it changes."""
        self.inventory = inventory
        self.rate_hz = rate_hz
        """The most samples a second: what clients are told, and the most they get."""
        self.demand = SamplingDemand(rate_hz, sampling or (lambda rate: None))
        self.latest: Sample | None = None
        """The sampler's latest sample, for /metrics."""
        self._unsent: deque[Sample] = deque()
        """Samples not yet handed to the connections, oldest first."""
        self._batch_began: float | None = None
        """When the oldest sample of the batch being gathered was read (sampler thread)."""
        self.results = ResultBoard(inventory.hostname)
        self.agent_id = agent_id
        self.secret = secret
        self.tls = tls
        self.connections: set[ClientConnection] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.throttle = AuthThrottle()
        self.admission = Admission()
        self.occupancy = Occupancy(inventory)
        self.jobs = Jobs(self.publish, data_dirs, self.occupancy, len(inventory.gpus))
        self.events = EventLog(inventory, rules or [], self.on_event)

    @property
    def authenticates_clients(self) -> bool:
        """A shared secret, or TLS that requires a client certificate (mutual TLS)."""
        return self.secret is not None or requires_client_certificate(self.tls)

    # Called from the sampler thread. The event loop is woken only when a client has subscribed
    # and its batch is due: with every client allowing half a second, four ticks in five wake
    # nobody. The loop encodes the batch's samples one after another, once for every client:
    # the encoder's code and data are then warm, where a tick that wakes to encode one sample
    # finds them cold.
    def on_sample(self, sample: Sample) -> None:
        self.latest = sample
        self.demand.check()
        self.occupancy.observe(sample)
        self.events.observe(sample)
        loop = self._loop
        if not self.demand.clients or loop is None or loop.is_closed():
            return
        self._unsent.append(sample)
        if self._batch_began is None:
            self._batch_began = sample.mono
        # Half a tick of slack: the tick that makes the batch `batch_s` old goes with it.
        if sample.mono - self._batch_began >= self.demand.batch_s - 0.5 / self.demand.rate_hz:
            self._batch_began = None
            loop.call_soon_threadsafe(self._send_samples)

    def _send_samples(self) -> None:
        """Every sample not yet sent, to every connection (the event loop's thread)."""
        samples = []
        while self._unsent:  # only this thread takes from the left
            sample = self._unsent.popleft()
            samples.append((sample.mono, encode_frame(to_wire(sample))))
        if samples:
            for connection in self.connections:
                connection.offer(samples)

    def on_event(self, event: Event) -> None:
        """An event to every client, from the thread that raised it."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.publish, event)

    def publish(self, message: Message) -> None:
        """A job's frame or an event to every client, encoded once; never dropped for a slow
        client. Samples read before it are offered first, so a client that keeps up receives
        them in the order they happened, batched or not."""
        self._send_samples()
        self.results.observe(message)
        frame = encode_frame(to_wire(message))
        for connection in self.connections:
            if connection.ready:
                connection.deliver(frame)

    def room_for_client(self) -> str | None:
        """None when one more client may log in; else why not, for its `busy` error."""
        clients = sum(connection.admitted for connection in self.connections)
        if clients < MAX_CONNECTIONS:
            return None
        log.warning("refusing a client: %d clients already", clients)
        return f"the agent serves {MAX_CONNECTIONS} clients already"

    async def _serve(self, stream: MessageStream, peer: str, waiting: Waiting | None) -> None:
        connection = ClientConnection(self, stream, peer, waiting)
        self.connections.add(connection)
        try:
            await connection.run()
        finally:
            self.connections.discard(connection)
            self.demand.subscribe(connection, None)

    async def serve_tcp(self, host: str, port: int, ready: Callable[[int], None]) -> None:
        """Serve until cancelled; `ready` gets the bound port (useful with port 0)."""
        if not is_loopback(host) and not self.authenticates_clients:
            raise ConfigFileError(
                f"refusing to listen on {host}, which is not loopback, without --secret-file "
                "(or --tls-client-ca); use a secret, or reach the agent over SSH"
            )
        self._loop = asyncio.get_running_loop()
        listener = listening_socket(host, port)
        ready(listener.getsockname()[1])
        try:
            await accept_forever(listener, self._serve, self.tls, self.admission)
        finally:
            await self.jobs.stop()
            await self.stop_connections("agent shutting down")

    async def stop_connections(self, reason: str) -> None:
        await asyncio.gather(*(connection.stop(reason) for connection in list(self.connections)))

    async def serve_stdio(self) -> None:
        """One connection over this process's stdin/stdout; returns when the peer hangs up.

        The real stdout is moved to a private descriptor and fd 1 pointed at stderr, so a stray
        print from any library cannot corrupt the frame stream. Both must be pipes: the agent
        asked `require_stdio_pipes` before it started.
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
            await self._serve(MessageStream(reader, writer), "stdio", None)
        finally:
            await self.jobs.stop()


def require_stdio_pipes() -> None:
    """ConfigFileError unless stdin and stdout are what a stdio agent serves over; the agent asks
    before it does anything else, so the error is the first and only thing it says."""
    for name, stream in (("stdin", sys.stdin), ("stdout", sys.stdout)):
        if not _is_pipe(stream.fileno()):
            raise ConfigFileError(f"--stdio serves one client over a pipe (a local spawn, "
                                  f"or ssh), and {name} is not one")  # fmt: skip


def _is_pipe(fd: int) -> bool:
    """A pipe, a socket or a terminal: what the event loop can wait on (not a file)."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


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
