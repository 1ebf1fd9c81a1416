"""One client's connection to the agent: handshake, commands, and a bounded outgoing queue.

Samples are encoded once by the agent and offered to every session as bytes. A session keeps
at most `QUEUE_LIMIT` of them; when its client reads too slowly the oldest are dropped and
counted, so one stalled client never holds memory or slows sampling for the others.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import TYPE_CHECKING

from dltui.protocol import auth
from dltui.protocol.errors import AuthError, ProtocolError
from dltui.protocol.framing import encode_frame
from dltui.protocol.messages import (
    MAX_RATE_HZ,
    PROTOCOL_VERSION,
    Auth,
    Bye,
    Cancel,
    Error,
    Hello,
    Message,
    Ping,
    Pong,
    Run,
    Subscribe,
    Welcome,
    to_wire,
)
from dltui.protocol.seal import seals
from dltui.protocol.stream import MessageStream

if TYPE_CHECKING:
    from dltui.agent.server import Agent

log = logging.getLogger(__name__)

QUEUE_LIMIT = 256
HANDSHAKE_TIMEOUT = 10.0
MAX_FRAME_BEFORE_AUTH = 4096
"""An auth frame is about 100 bytes: before it, no peer may make the agent buffer more."""


class Session:
    def __init__(self, agent: Agent, stream: MessageStream, peer: str) -> None:
        self.agent = agent
        self.stream = stream
        self.peer = peer
        self.dropped = 0
        self._samples: deque[bytes] = deque()
        self._control: deque[bytes] = deque()
        self._wake = asyncio.Event()
        self._period: float | None = None  # None until the client subscribes
        self._due: float | None = None  # when the next sample is due on the client's schedule
        self._last_seq = -1
        self._closing = False
        self._writer: asyncio.Task[None] | None = None
        self.ready = False  # set once the handshake succeeded: only then are results sent

    # --- outgoing -------------------------------------------------------------------------

    def offer(self, mono: float, frame: bytes) -> None:
        """A sample frame from the sampler; kept if the client's schedule asks for it.

        Samples are due one period apart on a schedule of their own, not counted from the last
        one sent, so a rate between the agent's ticks is kept on average (7 Hz from a 10 Hz
        agent: 7 a second, 0.1 or 0.2 s apart) and half a tick of slack lets a late tick count.
        After a pause the schedule starts again instead of catching up in a burst.
        """
        if self._period is None:
            return
        if self._due is not None and mono < self._due - 0.5 / self.agent.rate_hz:
            return
        due = mono if self._due is None else self._due + self._period
        self._due = due if due > mono else mono + self._period
        if len(self._samples) >= QUEUE_LIMIT:
            self._samples.popleft()
            self.dropped += 1
        self._samples.append(frame)
        self._wake.set()

    def _reply(self, message: Message) -> None:
        self.deliver(encode_frame(to_wire(message)))

    def deliver(self, frame: bytes) -> None:
        """A frame that must not be dropped (a reply, a benchmark result): ahead of samples."""
        self._control.append(frame)
        self._wake.set()

    async def _write_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._control or self._samples:
                queue = self._control or self._samples
                self.stream.write_frame(queue.popleft())
                await self.stream.writer.drain()
            if self._closing:
                return

    # --- incoming -------------------------------------------------------------------------

    async def run(self) -> None:
        limit = self.stream.max_frame
        self.stream.max_frame = MAX_FRAME_BEFORE_AUTH
        try:
            await asyncio.wait_for(self._handshake(), HANDSHAKE_TIMEOUT)
            self.stream.max_frame = limit
            self._writer = asyncio.create_task(self._write_loop())
            while not self._closing:
                message = await self.stream.receive()
                if self._handle(message):
                    break
        except TimeoutError:
            await self._refuse("timeout", "no handshake in time")
        except AuthError as exc:
            await self._refuse("auth_failed", str(exc))
        except ProtocolError as exc:
            log.warning("closing %s: %s", self.peer, exc)
            await self._refuse("protocol", str(exc))
        except (EOFError, ConnectionError):
            pass
        finally:
            await self._flush_and_close()

    async def stop(self, reason: str) -> None:
        """Say goodbye and close; the read loop then ends on EOF."""
        self._reply(Bye(reason))
        await self._flush_and_close()

    async def _flush_and_close(self) -> None:
        self._closing = True
        self._wake.set()
        if self._writer is not None:
            try:
                await asyncio.wait_for(self._writer, 1.0)
            except (TimeoutError, ConnectionError):
                pass  # a client that stopped reading gets no more; closing frees it
        await self.stream.close()

    async def _refuse(self, code: str, detail: str) -> None:
        try:
            await asyncio.wait_for(self.stream.send(Error(code, detail)), 1.0)
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
        log.info("client %s (%s) connected", message.client, self.peer)

    def _handle(self, message: Message) -> bool:
        """Act on one command; True when the session should end."""
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
            self._period, self._due = 1.0 / message.rate_hz, None
        elif isinstance(message, Ping):
            self._reply(Pong(message.token, time.time(), time.monotonic(), self.dropped))
        elif isinstance(message, Run):
            self.agent.jobs.start(message.job, message.what)
        elif isinstance(message, Cancel):
            if not self.agent.jobs.cancel(message.job):
                self._reply(Error("unknown_job", f"no running job {message.job!r}"))
        elif isinstance(message, Bye):
            return True
        else:
            raise ProtocolError(f"{message.TYPE} is not a command an agent accepts")
        return False
