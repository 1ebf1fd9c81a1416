"""One client's connection to the agent: handshake, commands, and a bounded outgoing queue.

Samples are encoded once by the agent and offered to every connection as bytes. Each keeps
at most `QUEUE_LIMIT` of them; when its client reads too slowly the oldest are dropped and
counted, so one stalled client never holds memory or slows sampling for the others. Replies and
results are never dropped, so a client that lets `CONTROL_LIMIT` bytes of them pile up (pings
it never reads the answers to) is disconnected instead.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Protocol

from dltui.agent.demand import SamplingDemand
from dltui.agent.events import EventLog
from dltui.agent.jobs import Jobs
from dltui.agent.throttle import AuthThrottle
from dltui.foreign_text import shown
from dltui.protocol import auth
from dltui.protocol.errors import AuthError, ProtocolError
from dltui.protocol.framing import encode_frame
from dltui.protocol.inventory import Inventory
from dltui.protocol.messages import (
    MAX_BATCH_S,
    MAX_RATE_HZ,
    PROTOCOL_VERSION,
    Auth,
    Bye,
    Cancel,
    ErrorMessage,
    Hello,
    Message,
    Ping,
    Pong,
    Run,
    Subscribe,
    Welcome,
)
from dltui.protocol.seal import seals
from dltui.protocol.stream import MessageStream
from dltui.protocol.wire import to_wire

if TYPE_CHECKING:
    from dltui.agent.admission import Waiting

log = logging.getLogger(__name__)

QUEUE_LIMIT = 256
CONTROL_LIMIT = 4 << 20
"""Bytes of replies and results queued for one client: some 60,000 pongs, or thousands of
results; a client this far behind is not reading them."""
CLOSE_GRACE = 1.0
"""How long a disconnected client that reads nothing keeps its socket, for the error to reach
it if it ever does read."""
CLIENT_NAME_SHOWN = 64
"""Characters of a client's name the log keeps."""
HANDSHAKE_TIMEOUT = 10.0
MAX_FRAME_BEFORE_AUTH = 4096
"""An auth frame is about 100 bytes: before it, no peer may make the agent buffer more."""


class _Busy(Exception):
    """The agent has all the clients it serves: said to one more that proved who it is."""


class Host(Protocol):
    """What a client connection needs of the agent that serves it (server.Agent): who it is,
    its rate, its secret, its admission and sampling, its jobs and events. A protocol, so the
    agent imports its client connections and not the other way round."""

    agent_id: str
    inventory: Inventory
    rate_hz: float
    secret: bytes | None
    demand: SamplingDemand
    throttle: AuthThrottle
    jobs: Jobs
    events: EventLog

    def room_for_client(self) -> str | None: ...


class ClientConnection:
    """The agent's side of one client: its handshake, the commands it sends, what is queued
    for it."""

    def __init__(
        self, agent: Host, stream: MessageStream, peer: str, waiting: Waiting | None = None
    ) -> None:
        self.agent = agent
        self.stream = stream
        self.peer = peer
        self.dropped = 0
        self._samples: deque[bytes] = deque()
        self._control: deque[bytes] = deque()
        self._control_bytes = 0
        self._wake = asyncio.Event()
        self._period: float | None = None  # None until the client subscribes
        self._due: float | None = None  # when the next sample is due on the client's schedule
        self._last_seq = -1
        self._closing = False
        self._writer: asyncio.Task[None] | None = None
        self.ready = False  # set once the handshake succeeded: only then are results sent
        self.admitted = False
        """Counted among the agent's clients: it proved who it is and there was room."""
        self._waiting = waiting
        if waiting is not None:  # its place among the connections waiting to log in
            waiting.on_expire(self._disconnect)

    # --- outgoing -------------------------------------------------------------------------

    def offer(self, samples: list[tuple[float, bytes]]) -> None:
        """Sample frames from the sampler, (mono, frame) oldest first: those the client's rate
        asks for go out in one write, or wait behind what is queued."""
        if (period := self._period) is None:
            return
        wanted = [frame for mono, frame in samples if self._wants(mono, period)]
        if not wanted:
            return
        if self._idle():  # nothing waits: straight to the socket, no task switch
            self.stream.write_frames(wanted)
            return
        for frame in wanted:
            if len(self._samples) >= QUEUE_LIMIT:
                self._samples.popleft()
                self.dropped += 1
            self._samples.append(frame)
        self._wake.set()

    def _wants(self, mono: float, period: float) -> bool:
        """Whether a client that wants a sample every `period` seconds asks for the tick read
        at `mono`.

        At the agent's rate or more, every tick: a late tick and the on-time one the sampler
        runs right after it come close together, and neither may be skipped. Below it, samples
        are due one period apart on a schedule of their own, not counted from the last one sent,
        so the rate is kept on average (7 Hz from a 10 Hz agent: 7 a second, 0.1 or 0.2 s
        apart), half a tick of slack lets a late tick count, and after a pause the schedule
        starts again instead of catching up in a burst.
        """
        tick = 1.0 / self.agent.demand.rate_hz  # the sampler's rate now, which follows demand
        if period <= tick * 1.05:
            return True
        if self._due is not None and mono < self._due - tick / 2:
            return False
        due = mono if self._due is None else self._due + period
        self._due = due if due > mono else mono + period
        return True

    def _idle(self) -> bool:
        """Nothing queued, nothing unsent in the transport, the writer waiting for work."""
        transport = self.stream.writer.transport
        return (
            self._writer is not None
            and not (self._closing or self._samples or self._control)
            and not transport.is_closing()
            and transport.get_write_buffer_size() == 0
        )

    def _reply(self, message: Message) -> None:
        self.deliver(encode_frame(to_wire(message)))

    def deliver(self, frame: bytes) -> None:
        """A frame that must not be dropped (a reply, a benchmark result): ahead of samples.
        A client that has left CONTROL_LIMIT bytes of them unread is disconnected."""
        if self._closing:
            return
        if self._control_bytes + len(frame) > CONTROL_LIMIT:
            self._overflow()
            return
        self._control.append(frame)
        self._control_bytes += len(frame)
        self._wake.set()

    def _overflow(self) -> None:
        """Disconnect a client that does not read its replies."""
        unread = self._control_bytes
        log.warning("closing %s: it left %d bytes of replies unread", self.peer, unread)
        self._disconnect("overflow", f"disconnected: {unread} bytes of replies were left unread")

    def _disconnect(self, code: str, detail: str) -> None:
        """End the connection now, from outside its own flow (a client that reads nothing, or
        a login whose time is up): an error frame behind what the socket already holds, then
        the connection closed, forcibly after CLOSE_GRACE."""
        self._closing = True
        self._drop_queues()
        self._wake.set()
        transport = self.stream.writer.transport
        if transport.is_closing():
            return
        self.stream.write_frame(encode_frame(to_wire(ErrorMessage(code, detail))))
        transport.close()
        asyncio.get_running_loop().call_later(CLOSE_GRACE, transport.abort)

    def _drop_queues(self) -> None:
        self._control.clear()
        self._samples.clear()
        self._control_bytes = 0

    async def _write_loop(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                while not self._closing_now and (self._control or self._samples):
                    if self._control:
                        frame = self._control.popleft()
                        self._control_bytes -= len(frame)
                    else:
                        frame = self._samples.popleft()
                    self.stream.write_frame(frame)
                    await self.stream.writer.drain()
                if self._closing:
                    return
        except ConnectionError as exc:  # caught, not left on the task (see _forget_frames)
            _forget_frames(exc)
        finally:
            self._drop_queues()

    @property
    def _closing_now(self) -> bool:
        """The transport is closing: nothing more can be written."""
        return self.stream.writer.transport.is_closing()

    # --- incoming -------------------------------------------------------------------------

    async def run(self) -> None:
        limit = self.stream.max_frame
        self.stream.max_frame = MAX_FRAME_BEFORE_AUTH
        try:
            # Not wait_for: Python 3.11's drops a cancel (the agent stopping) that comes as the
            # handshake ends, and the connection would go on to serve.
            async with asyncio.timeout(HANDSHAKE_TIMEOUT):
                await self._handshake()
            self.stream.max_frame = limit
            self._writer = asyncio.create_task(self._write_loop())
            while not self._closing:
                message = await self.stream.receive()
                if self._handle(message):
                    break
        except TimeoutError:
            await self._refuse("timeout", "no handshake in time")
        except _Busy as exc:
            await self._refuse("busy", str(exc))
        except AuthError as exc:
            await self._refuse("auth_failed", str(exc))
        except ProtocolError as exc:
            log.warning("closing %s: %s", self.peer, shown(str(exc)))
            await self._refuse("protocol", str(exc))
        except (EOFError, ConnectionError) as exc:
            _forget_frames(exc)
        finally:
            await self._flush_and_close()

    async def stop(self, reason: str) -> None:
        """Say goodbye and close; the read loop then ends on EOF."""
        self._reply(Bye(reason))
        await self._flush_and_close()

    async def _flush_and_close(self) -> None:
        self._closing = True
        self._wake.set()
        writer, self._writer = self._writer, None
        if writer is not None:
            try:
                await asyncio.wait_for(writer, 1.0)
            except TimeoutError:
                pass  # a client that stopped reading gets no more; closing frees it
        self._drop_queues()
        await self.stream.close()

    async def _refuse(self, code: str, detail: str) -> None:
        try:
            await asyncio.wait_for(self.stream.send(ErrorMessage(code, detail)), 1.0)
        except (TimeoutError, ConnectionError, RuntimeError):
            pass  # the peer is gone or not reading; closing is all that is left

    async def _handshake(self) -> None:
        secret = self.agent.secret
        challenge = auth.new_nonce() if secret else None
        await self.stream.send(
            Hello(PROTOCOL_VERSION, self.agent.agent_id, self.agent.inventory.hostname, challenge)
        )
        message = await self.stream.receive()
        if not isinstance(message, Auth):
            raise AuthError(f"expected auth, got {message.TYPE}")
        if message.version != PROTOCOL_VERSION:
            raise AuthError(
                f"protocol version {message.version} is not supported "
                f"(this agent speaks {PROTOCOL_VERSION})"
            )
        if len(message.nonce) != auth.NONCE_SIZE:  # with a secret or without: one protocol
            raise ProtocolError(
                f"auth nonce must be {auth.NONCE_SIZE} bytes, got {len(message.nonce)}"
            )
        auth_body = self.stream.last_body
        proof = None
        if secret and challenge:
            expected = auth.client_mac(secret, challenge, message.nonce)
            if not await self.agent.throttle.check(
                self.peer, lambda: auth.same(expected, message.mac)
            ):
                raise AuthError("wrong secret")
            proof = auth.agent_proof(secret, challenge, message.nonce)
        if (busy := self.agent.room_for_client()) is not None:
            raise _Busy(busy)
        self.admitted = True
        if self._waiting is not None:
            self._waiting.release()
        welcome_body = await self.stream.send(
            Welcome(
                agent_id=self.agent.agent_id,
                inventory=self.agent.inventory,
                rate_hz=self.agent.rate_hz,
                wall=time.time(),
                mono=time.monotonic(),
                proof=proof,
            )
        )
        if secret and challenge:
            client, agent = seals(secret, challenge, message.nonce, auth_body, welcome_body)
            self.stream.seal(outgoing=agent, incoming=client)
        self.ready = True
        for event in self.agent.events.standing(time.time()):  # what is open, before anything new
            self._reply(event)
        # The name is the client's to choose: one line in the log, never a forged second one.
        log.info("client %s (%s) connected", shown(message.client, CLIENT_NAME_SHOWN), self.peer)

    def _handle(self, message: Message) -> bool:
        """Act on one command; True when the connection should end."""
        seq = getattr(message, "seq", None)
        if isinstance(message, (Subscribe, Ping, Run, Cancel)) or (
            isinstance(message, Bye) and seq is not None
        ):
            if seq is None or seq <= self._last_seq:
                raise ProtocolError(f"command sequence {seq} after {self._last_seq}: refused")
            self._last_seq = seq
        if isinstance(message, Subscribe):
            if not 0 < message.rate_hz <= MAX_RATE_HZ:
                raise ProtocolError(f"rate {message.rate_hz} Hz is outside (0, {MAX_RATE_HZ:g}]")
            if not 0 <= message.batch_s <= MAX_BATCH_S:
                raise ProtocolError(f"batch {message.batch_s} s is outside [0, {MAX_BATCH_S:g}]")
            self._period, self._due = 1.0 / message.rate_hz, None
            self.agent.demand.subscribe(self, message.rate_hz, message.batch_s)
        elif isinstance(message, Ping):
            self._reply(Pong(message.token, time.time(), time.monotonic(), self.dropped))
        elif isinstance(message, Run):
            self.agent.jobs.start(message.job, message.what)
        elif isinstance(message, Cancel):
            if not self.agent.jobs.cancel(message.job):
                self._reply(ErrorMessage("unknown_job", f"no running job {message.job!r}"))
        elif isinstance(message, Bye):
            return True
        else:
            raise ProtocolError(f"{message.TYPE} is not a command an agent accepts")
        return False


def _forget_frames(exc: BaseException) -> None:
    """Drop a connection error's traceback. asyncio keeps the exception that ended a connection
    (the stream's reader raises the same object to every later read), so its traceback, whose
    frames hold the connection and everything it queued, would keep them alive in a cycle that
    only the garbage collector breaks."""
    exc.__traceback__ = None
