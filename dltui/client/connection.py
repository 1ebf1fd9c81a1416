"""A client's connection to one agent: handshake, subscription, pings, reconnect.

Everything it learns is handed on as protocol messages through `on_message`, including its
own state (`ConnectionState` frames), so the fleet, the TUI and a recorder see the same stream
whether the agent is live or the stream comes from a file.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import socket
import ssl
import time
import uuid
from collections.abc import Callable

from dltui.client.clock import ClockEstimator
from dltui.client.target import Target
from dltui.client.tls import describe_tls_error
from dltui.client.transport import (
    Transport,
    TransportAuthError,
    failure_reason,
    open_transport,
)
from dltui.foreign_text import clean
from dltui.protocol import auth
from dltui.protocol.bench_plans import Plan
from dltui.protocol.errors import AuthError, ProtocolError
from dltui.protocol.messages import (
    PROTOCOL_VERSION,
    Auth,
    Bye,
    Cancel,
    ConnectionState,
    ConnectionStateName,
    ErrorMessage,
    Hello,
    JobEnd,
    Message,
    Ping,
    Pong,
    Run,
    Subscribe,
    Welcome,
)
from dltui.protocol.seal import seals
from dltui.protocol.stream import MessageStream

log = logging.getLogger(__name__)

PING_INTERVAL = 1.0
SILENCE_LIMIT = 5.0  # no frame at all for this long: the agent is treated as gone
SILENCE_GRACE = 1.0
BACKOFF = (0.25, 0.5, 1.0, 2.0)
AUTH_RETRY = 10.0
HANDSHAKE_TIMEOUT = 10.0
STARTED_AGENT_TIMEOUT = 45.0
"""The handshake's limit with an agent the client starts: the agent says hello once it has
started, and it waits up to 30 s for NVML before going on without GPUs (--nvml-timeout)."""


class AgentBusy(ConnectionError):
    """The agent answered `busy`: it has all the clients, or all the connections waiting to log
    in, that it takes. Not a refusal: try again later (AgentConnection does, with backoff)."""


def _refusal(error: ErrorMessage) -> Exception:
    if error.code == "busy":
        return AgentBusy(f"agent busy: {error.message}")
    return AuthError(f"agent refused: {error.message}")


def handshake_timeout(target: Target) -> float:
    return STARTED_AGENT_TIMEOUT if target.starts_agent else HANDSHAKE_TIMEOUT


OnMessage = Callable[[str, Message], None]


def new_job_id() -> str:
    return uuid.uuid4().hex[:12]


async def handshake(
    stream: MessageStream,
    secret: bytes | None,
    client_name: str,
    timeout: float = HANDSHAKE_TIMEOUT,
    clock: ClockEstimator | None = None,
) -> Welcome:
    """Authenticate to an agent; AuthError when either side's proof fails, AgentBusy when the
    agent has no room now, TimeoutError when the agent says nothing in time (an agent that
    hangs, not one that refuses).

    With `clock`, the auth → welcome round trip is its first exchange, so the agent's clock
    offset is known before the first sample arrives.
    """

    async def exchange() -> Welcome:
        hello = await stream.receive()
        if isinstance(hello, ErrorMessage):
            raise _refusal(hello)
        if not isinstance(hello, Hello):
            raise ProtocolError(f"expected hello, got {hello.TYPE}")
        if hello.version != PROTOCOL_VERSION:
            raise AuthError(
                f"agent speaks protocol {hello.version}, this client {PROTOCOL_VERSION}"
            )
        if hello.challenge is not None and len(hello.challenge) != auth.NONCE_SIZE:
            raise ProtocolError(
                f"the agent's challenge must be {auth.NONCE_SIZE} bytes, got {len(hello.challenge)}"
            )
        if hello.challenge is not None and secret is None:
            raise AuthError("the agent requires a secret: pass --secret-file")
        nonce = auth.new_nonce()
        mac = None
        if hello.challenge and secret is not None:  # a challenge without a secret: refused above
            mac = auth.client_mac(secret, hello.challenge, nonce)
        sent_wall, sent_mono = time.time(), time.monotonic()
        auth_body = await stream.send(Auth(PROTOCOL_VERSION, client_name, nonce, mac))
        reply = await stream.receive()
        if clock is not None and isinstance(reply, Welcome):
            clock.add(sent_wall, time.monotonic() - sent_mono, reply.wall)
        if isinstance(reply, ErrorMessage):
            raise _refusal(reply)
        if not isinstance(reply, Welcome):
            raise ProtocolError(f"expected welcome, got {reply.TYPE}")
        if secret is not None:
            expected = auth.agent_proof(secret, hello.challenge or b"", nonce)
            if hello.challenge is None or not auth.same(expected, reply.proof):
                raise AuthError("the agent could not prove it knows the secret")
            ours, agents = seals(secret, hello.challenge, nonce, auth_body, stream.last_body)
            stream.seal(outgoing=ours, incoming=agents)
        return reply

    try:
        async with asyncio.timeout(timeout):  # not wait_for: see transport.open_transport
            return await exchange()
    except ssl.SSLError as exc:  # TLS 1.3: a refused client certificate shows on first read
        raise TransportAuthError(describe_tls_error(exc)) from exc
    except EOFError as exc:
        if stream.writer.get_extra_info("ssl_object") is not None:
            # A refused client certificate ends TLS 1.3 without an alert reaching us.
            raise TransportAuthError(
                "TLS: the agent closed the connection during the handshake; if it requires "
                "a client certificate, pass --tls-cert and --tls-key signed by a CA it trusts"
            ) from exc
        why = f" ({exc})" if str(exc) != "connection closed" else ""
        raise AuthError(f"the agent closed the connection during the handshake{why}") from exc
    except TimeoutError as exc:
        raise TimeoutError(f"no handshake from the agent within {timeout:g} s") from exc


class AgentConnection:
    """Keeps one agent connected, forever, until `stop`."""

    def __init__(
        self,
        target: Target,
        on_message: OnMessage,
        secret: bytes | None = None,
        rate_hz: float = 10.0,
        source: str | None = None,
        batch_s: float = 0.0,
    ) -> None:
        """`batch_s`: how long each sample may wait at the agent, to come with later ones."""
        self.target = target
        self.source = source or target.label
        self._deliver = on_message
        self.secret = secret
        self.rate_hz = rate_hz
        self.batch_s = batch_s
        self.clock = ClockEstimator()
        self.state: ConnectionStateName = "connecting"
        self.link: ConnectionState | None = None
        """The last link frame this connection reported: how it stands now."""
        self.welcome: Welcome | None = None
        self._seq = itertools.count(1)
        self._stopping = False
        self._transport: Transport | None = None
        self._pings: dict[int, tuple[float, float]] = {}  # token -> (wall, mono) sent
        self._jobs: set[str] = set()
        """Jobs started here whose end has not arrived."""

    def on_message(self, source: str, message: Message) -> None:
        """Hand a frame on, its text made data first (the agent's words and names are
        foreign: dltui.foreign_text), whether the agent sent it or it tells of the link."""
        self._deliver(source, clean(message))

    def _link(self, state: ConnectionStateName, detail: str | None = None) -> None:
        self.state = state
        rtt, offset = (self.clock.rtt, self.clock.offset) if state == "live" else (None, None)
        self.link = ConnectionState(state, time.time(), detail, rtt, offset)
        self.on_message(self.source, self.link)

    async def run(self) -> None:
        attempt = 0
        self._link("connecting")
        while not self._stopping:
            try:
                await self._session()
                attempt = 0
                detail = "agent closed the connection"
            except AuthError as exc:
                self._link("auth_failed", str(exc))
                await asyncio.sleep(AUTH_RETRY)
                continue
            except AgentBusy as exc:  # no room now, not a refusal: back off and try again
                self._link("busy", str(exc))
                await asyncio.sleep(BACKOFF[min(attempt, len(BACKOFF) - 1)])
                attempt += 1
                continue
            except (OSError, EOFError, ProtocolError) as exc:
                detail = failure_reason(exc)
            if self._stopping:
                break
            self._link("offline", detail)
            self._lost_jobs(detail)
            await asyncio.sleep(BACKOFF[min(attempt, len(BACKOFF) - 1)])
            attempt += 1

    async def send(self, command: Callable[[int], Message]) -> None:
        """Send a command, numbered in sequence, on the live connection."""
        transport = self._transport
        if transport is None or self.state != "live":
            raise ConnectionError(f"{self.source} is not connected")
        await transport.stream.send(command(next(self._seq)))

    async def run_plan(self, plan: Plan, job: str | None = None) -> str:
        """Start a benchmark job on this agent; its frames arrive through `on_message`."""
        job = job or new_job_id()
        await self.send(lambda seq: Run.of(seq, job, plan))
        self._jobs.add(job)
        return job

    async def cancel(self, job: str) -> None:
        await self.send(lambda seq: Cancel(seq, job))

    async def stop(self) -> None:
        self._stopping = True
        if self._transport is not None:
            try:
                await self._transport.stream.send(Bye("client closing", next(self._seq)))
            except (ConnectionError, RuntimeError):
                pass  # already gone
            await self._transport.close()

    async def _session(self) -> None:
        self._transport = transport = await open_transport(self.target)
        try:
            stream = transport.stream
            welcome = await handshake(
                stream, self.secret, socket.gethostname(), handshake_timeout(self.target),
                self.clock,
            )  # fmt: skip
            self.welcome = welcome = clean(welcome)
            self.on_message(self.source, welcome)
            if self._stopping:  # stopped while the handshake ended: go no further
                return
            await stream.send(Subscribe(next(self._seq), self.rate_hz, self.batch_s))
            self._link("live")
            pinger = asyncio.create_task(self._ping_loop(stream))
            try:
                await self._read_loop(stream)
            finally:
                pinger.cancel()
        finally:
            self._transport = None
            await transport.close()

    async def _read_loop(self, stream: MessageStream) -> None:
        while True:
            try:
                async with asyncio.timeout(SILENCE_LIMIT):  # no task a frame, as wait_for made
                    message = await stream.receive()
            except TimeoutError:
                # A client that was itself suspended (SIGSTOP, a closed laptop) wakes to a timer
                # that fires before it reads what has been waiting: one short look first.
                async with asyncio.timeout(SILENCE_GRACE):
                    message = await stream.receive()
            if isinstance(message, Pong):
                self._on_pong(message)
            elif isinstance(message, Bye):
                self.on_message(self.source, message)
                raise EOFError(f"agent said bye: {message.reason}")
            elif isinstance(message, JobEnd):
                self._jobs.discard(message.job)
            self.on_message(self.source, message)

    def _lost_jobs(self, detail: str) -> None:
        """A job whose agent went away has ended as far as this client can tell: say so, once,
        rather than leave it running forever in the UI and in a recording."""
        for job in sorted(self._jobs):
            why = f"lost the connection to the agent: {detail}"
            self.on_message(self.source, JobEnd(job, "failed", why, time.time()))
        self._jobs.clear()

    def _on_pong(self, pong: Pong) -> None:
        sent = self._pings.pop(pong.token, None)
        if sent is None:
            return
        sent_wall, sent_mono = sent
        self.clock.add(sent_wall, time.monotonic() - sent_mono, pong.wall)
        self._link("live")

    async def _ping_loop(self, stream: MessageStream) -> None:
        for token in itertools.count(1):
            self._pings = {t: s for t, s in self._pings.items() if t > token - 8}
            self._pings[token] = (time.time(), time.monotonic())
            await stream.send(Ping(next(self._seq), token))
            await asyncio.sleep(PING_INTERVAL)
