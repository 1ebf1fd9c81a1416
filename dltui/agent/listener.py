"""Accepting TCP connections, in TLS when the agent has a certificate.

A TLS agent looks at each connection's first byte before the TLS handshake: a TLS client opens
with a handshake record (0x16). Anything else, or silence (a plaintext dltui client waits for
the agent's hello), gets one plaintext error frame saying that TLS is required and is closed,
so the user reads why instead of waiting for a timeout.

Every connection takes a place in the agent's admission (admission.py) from the moment it is
accepted until it has logged in: the TLS handshake is part of the time it is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from dltui.agent.admission import Admission, Waiting
from dltui.protocol.framing import encode_frame
from dltui.protocol.messages import ErrorMessage
from dltui.protocol.stream import MessageStream
from dltui.protocol.wire import to_wire
from dltui.userfiles import CERTIFICATE, PRIVATE_KEY, check_pem, load_pair

if TYPE_CHECKING:  # ssl is loaded only where TLS is served (commands/agent.py)
    import ssl

log = logging.getLogger(__name__)

TLS_HANDSHAKE_RECORD = 0x16
FIRST_BYTE_WAIT = 2.0  # a TLS client sends its hello at once; a plaintext one never does
TLS_HANDSHAKE_TIMEOUT = 10.0
STREAM_LIMIT = 2**20
TLS_REQUIRED = "this agent requires TLS: connect with tls://HOST:PORT and --tls-ca"

Handler = Callable[[MessageStream, str, Waiting], Awaitable[None]]
BUSY_SOURCE = "too many connections from your address are waiting to log in; try again"


def requires_client_certificate(tls: ssl.SSLContext | None) -> bool:
    """Whether `tls` is mutual TLS: a client must present a certificate."""
    if tls is None:
        return False
    import ssl  # loaded already: `tls` is one of its contexts

    return tls.verify_mode == ssl.CERT_REQUIRED


def server_context(cert: str, key: str, client_ca: str | None = None) -> ssl.SSLContext:
    """TLS 1.2+ with this certificate; with `client_ca`, clients must present a certificate
    that CA signed (mutual TLS). OSError or ssl.SSLError when a file is unusable."""
    import ssl

    check_pem(cert, "certificate", CERTIFICATE)
    check_pem(key, "key", PRIVATE_KEY)
    if client_ca is not None:
        check_pem(client_ca, "client CA", CERTIFICATE)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    load_pair(context, cert, key)
    if client_ca is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(client_ca)
    return context


def listening_socket(host: str, port: int) -> socket.socket:
    family, _, _, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.create_server(address, family=family, backlog=128)  # SO_REUSEADDR on POSIX
    sock.setblocking(False)
    return sock


async def accept_forever(
    listener: socket.socket, handle: Handler, tls: ssl.SSLContext | None, admission: Admission
) -> None:
    """Serve each connection with `handle` until cancelled (the connections' own tasks go on,
    so that the agent can say goodbye on them)."""
    loop = asyncio.get_running_loop()
    connections: set[asyncio.Task[None]] = set()
    try:
        while True:
            sock, address = await loop.sock_accept(listener)
            task = asyncio.create_task(_connection(sock, address, handle, tls, admission))
            connections.add(task)
            task.add_done_callback(connections.discard)
    finally:
        listener.close()


async def _connection(
    sock: socket.socket,
    address: tuple[str, int],
    handle: Handler,
    tls: ssl.SSLContext | None,
    admission: Admission,
) -> None:
    sock.setblocking(False)
    peer = f"{address[0]}:{address[1]}"
    task = asyncio.current_task()
    assert task is not None
    # Until there is a stream to say why on, a connection whose time is up is just dropped.
    waiting = admission.admit(address[0], lambda code, detail: task.cancel())
    if waiting is None:
        if tls is None:  # a TLS client could not read a plaintext frame
            _say(sock, ErrorMessage("busy", BUSY_SOURCE))
        sock.close()
        return
    try:
        with contextlib.ExitStack() as closing:
            closing.callback(sock.close)  # until a transport owns the socket
            if tls is not None and not await _opens_with_tls(sock):
                log.warning("refusing %s: it does not speak TLS", peer)
                _say(sock, ErrorMessage("tls_required", TLS_REQUIRED))
                return
            try:
                stream = await _open_stream(sock, tls)
            except (OSError, TimeoutError) as exc:  # ssl.SSLError is an OSError
                log.warning("TLS handshake with %s failed: %s", peer, exc)
                return
            closing.pop_all()
        await handle(stream, peer, waiting)
    finally:
        waiting.release()


def _say(sock: socket.socket, error: ErrorMessage) -> None:
    """One plaintext error frame, if the socket has room for it now; never waits."""
    with contextlib.suppress(OSError):
        sock.send(encode_frame(to_wire(error)))


async def _opens_with_tls(sock: socket.socket) -> bool:
    """Whether the first byte the peer sends, within FIRST_BYTE_WAIT, opens a TLS handshake."""
    loop = asyncio.get_running_loop()
    readable: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not readable.done():
            readable.set_result(None)

    loop.add_reader(sock.fileno(), wake)
    try:
        await asyncio.wait_for(readable, FIRST_BYTE_WAIT)
    except TimeoutError:
        return False
    finally:
        loop.remove_reader(sock.fileno())
    try:
        first = sock.recv(1, socket.MSG_PEEK)
    except OSError:
        return False
    return first == bytes([TLS_HANDSHAKE_RECORD])


async def _open_stream(sock: socket.socket, tls: ssl.SSLContext | None) -> MessageStream:
    return MessageStream(*await accepted_streams(sock, tls, STREAM_LIMIT, TLS_HANDSHAKE_TIMEOUT))


async def accepted_streams(
    sock: socket.socket, tls: ssl.SSLContext | None, limit: int, handshake_timeout: float
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """asyncio streams over an accepted socket, after the TLS handshake when there is `tls`."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit)
    protocol = asyncio.StreamReaderProtocol(reader)
    transport, _ = await loop.connect_accepted_socket(
        lambda: protocol,
        sock,
        ssl=tls,
        ssl_handshake_timeout=handshake_timeout if tls is not None else None,
    )
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)
