"""Serving `/metrics` over HTTP, or HTTPS with the agent's certificate rules, on the agent's
event loop.

prometheus-client writes the exposition and h11 speaks HTTP/1.1; the connections are the
agent's own, on its event loop, beside its clients. A scrape never calls NVML (metrics.py), so
answering it there cannot hold the loop for long, and it costs no thread: the server it replaces
(a thread per connection, wsgiref, HTTP/1.0) spent 2.7 ms of CPU a scrape on the H200, several
times the exposition itself. Prometheus keeps its connection open between scrapes (HTTP/1.1
keep-alive), so a scrape is one read and one write on a socket already open.

Each connection has a deadline for its TLS handshake and for each request; how many stay open,
from one address and in all, and who makes room for a newcomer, is metrics_budget's. A
connection is answered one request at a time: the next is not read until the answer to the last
has left the agent (its socket buffer kept small), so requests sent ahead and never read cannot
queue work or memory here, and the event loop turns between answers. Like the agent's own port, it
listens on loopback unless told otherwise, and beyond loopback only with TLS or an explicit
`--metrics-insecure`: the metrics say what the server is and does.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from http import HTTPStatus

import h11
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.openmetrics import exposition as openmetrics

from dltui.agent.config import ConfigFileError
from dltui.agent.listener import accepted_streams, listening_socket
from dltui.agent.metrics_budget import Budget, Held
from dltui.agent.server import is_loopback

log = logging.getLogger(__name__)

SEND_BUFFER = 128 * 1024
"""Bytes the kernel holds of a connection's answers: a scrape or two, not a backlog."""
CONNECTION_TIMEOUT = 10.0
"""Seconds a connection may take to finish its TLS handshake, to send a request once it has
begun one, or to take the answer."""
KEEP_ALIVE = 30.0
"""Seconds an open connection may wait for its next request: more than Prometheus's default
15 s between scrapes, so that its connection stays open from one to the next."""
MAX_REQUEST = 16 * 1024
PATH = "/metrics"
Encoder = Callable[[CollectorRegistry], bytes]


@dataclass(frozen=True, slots=True)
class MetricsOptions:
    host: str
    port: int
    tls: ssl.SSLContext | None = None
    insecure: bool = False
    """Serve plain HTTP beyond loopback, as asked on purpose."""

    def check(self) -> None:
        """ConfigFileError when the address is beyond loopback without TLS or `insecure`."""
        if not is_loopback(self.host) and self.tls is None and not self.insecure:
            raise ConfigFileError(
                f"refusing to serve metrics on {self.host}, which is not loopback, without "
                "--metrics-tls-cert/--metrics-tls-key; or say --metrics-insecure to serve "
                "them in plain HTTP to anyone who can reach the port"
            )

    @property
    def scheme(self) -> str:
        return "https" if self.tls is not None else "http"


def encoder_for(accept: str) -> tuple[Encoder, str]:
    """The exposition the scraper asked for, and its content type (prometheus-client chooses).

    Every dltui metric name is a legacy Prometheus name, which no escaping changes; the
    OpenMetrics writer's default escaping still looks at each character of each sample's name
    in Python, a third of its time. Asking it not to escape gives the same bytes.
    """
    encoder, content_type = choose_encoder(accept)
    if (
        isinstance(encoder, partial)
        and encoder.func is openmetrics.generate_latest
        and encoder.keywords.get("escaping") == openmetrics.UNDERSCORES
    ):
        encoder = partial(encoder, escaping=openmetrics.ALLOWUTF8)
    return encoder, content_type


class MetricsServer:
    """/metrics: the port is taken at construction (OSError if it cannot be), and served on the
    running event loop while `serve` runs."""

    def __init__(self, options: MetricsOptions, registry: CollectorRegistry) -> None:
        options.check()
        self._tls = options.tls
        self._registry = registry
        self._listener = listening_socket(options.host, options.port)
        self.port: int = self._listener.getsockname()[1]
        host = f"[{options.host}]" if ":" in options.host else options.host
        self.url = f"{options.scheme}://{host}:{self.port}{PATH}"
        self.budget = Budget()

    async def serve(self) -> None:
        """Accept and answer scrapes until cancelled; then the port is closed."""
        loop = asyncio.get_running_loop()
        connections: set[asyncio.Task[None]] = set()
        try:
            while True:
                sock, address = await loop.sock_accept(self._listener)
                held = self.budget.admit(address[0])
                if held is None:
                    log.debug("metrics: refusing %s: every connection is at work", address)
                    sock.close()
                    continue
                task = asyncio.create_task(self._connection(sock, address, held))
                held.task = task
                connections.add(task)
                task.add_done_callback(partial(_ended, connections, sock))
        finally:
            self._listener.close()
            for task in connections:
                task.cancel()

    async def _connection(self, sock: socket.socket, address: object, held: Held) -> None:
        writer: asyncio.StreamWriter | None = None
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
            reader, writer = await accepted_streams(
                sock, self._tls, MAX_REQUEST, CONNECTION_TIMEOUT
            )
            writer.transport.set_write_buffer_limits(high=0)  # drain() waits for all of it
            await self._answer_each(reader, writer, held)
        except (OSError, TimeoutError, h11.LocalProtocolError) as exc:  # SSLError is an OSError
            log.debug("metrics: connection from %s ended: %r", address, exc)
        finally:
            self.budget.release(held)
            if writer is not None:
                writer.close()
            else:
                sock.close()

    async def _answer_each(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, held: Held
    ) -> None:
        http = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_REQUEST)
        wait = CONNECTION_TIMEOUT
        while True:
            try:
                request = await _next_request(http, reader, wait, held)
            except h11.RemoteProtocolError as exc:
                writer.write(_refusal(http, exc.error_status_hint))
                async with asyncio.timeout(CONNECTION_TIMEOUT):
                    await writer.drain()
                return
            if request is None:
                return
            writer.write(b"".join(self._answer(http, request)))
            async with asyncio.timeout(CONNECTION_TIMEOUT):
                await writer.drain()
            if http.our_state is not h11.DONE or http.their_state is not h11.DONE:
                return  # either side asked to close
            http.start_next_cycle()
            held.now("idle")
            wait = KEEP_ALIVE
            await asyncio.sleep(0)  # a request sent ahead waits its turn behind everyone else

    def _answer(self, http: h11.Connection, request: h11.Request) -> list[bytes]:
        headers = []
        if request.method not in (b"GET", b"HEAD"):
            status, content_type, body = 405, "text/plain", b"only GET and HEAD\n"
            headers.append(("Allow", "GET, HEAD"))
        elif request.target.split(b"?")[0] != PATH.encode():
            status, content_type, body = 404, "text/plain", b"metrics are at /metrics\n"
        else:
            accept = b",".join(value for name, value in request.headers if name == b"accept")
            encoder, content_type = encoder_for(accept.decode("latin-1"))
            status, body = 200, encoder(self._registry)
        # A scrape is tens of kB: gzip would cost the agent more CPU than the bytes cost.
        headers += [("Content-Type", content_type), ("Content-Length", str(len(body)))]
        reason = HTTPStatus(status).phrase
        out = [http.send(h11.Response(status_code=status, headers=headers, reason=reason)) or b""]
        if request.method != b"HEAD":
            out.append(http.send(h11.Data(data=body)) or b"")
        out.append(http.send(h11.EndOfMessage()) or b"")
        return out


def _ended(
    connections: set[asyncio.Task[None]], sock: socket.socket, task: asyncio.Task[None]
) -> None:
    """A connection's task is over; pushed out before it began, its socket is still ours."""
    connections.discard(task)
    if sock.fileno() != -1 and task.cancelled():
        sock.close()


def _refusal(http: h11.Connection, status: int) -> bytes:
    """An empty answer with `status` to a request h11 could not read, where one can be sent."""
    if http.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
        return b""
    headers = [("Content-Length", "0"), ("Connection", "close")]
    answer = h11.Response(status_code=status, headers=headers, reason=HTTPStatus(status).phrase)
    return (http.send(answer) or b"") + (http.send(h11.EndOfMessage()) or b"")


async def _next_request(
    http: h11.Connection, reader: asyncio.StreamReader, wait: float, held: Held
) -> h11.Request | None:
    """The next whole request (its end of message read too), or None when the peer closes, sends
    nothing for `wait` seconds, or takes more than CONNECTION_TIMEOUT to finish what it began.
    h11.RemoteProtocolError for what is not HTTP/1.1."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    begun = False
    request: h11.Request | None = None
    body = 0
    while True:
        event = http.next_event()
        if event is not h11.NEED_DATA and held.state != "busy":
            held.now("busy")  # a request sent ahead, already read: at work from here
        if event is h11.NEED_DATA:
            try:
                async with asyncio.timeout_at(deadline):
                    data = await reader.read(MAX_REQUEST)
            except TimeoutError:
                return None
            if not begun:
                begun, deadline = True, loop.time() + CONNECTION_TIMEOUT
                held.now("busy")
            http.receive_data(data)
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):  # a GET has no body: a little is read past, no more
            body += len(event.data)
            if body > MAX_REQUEST:
                return None
        elif isinstance(event, h11.EndOfMessage):
            return request
        else:  # the peer closed
            return None
