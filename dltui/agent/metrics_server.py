"""Serving `/metrics` over HTTP, or HTTPS with the agent's certificate rules.

prometheus-client's WSGI app writes the exposition; the server around it is ours, because its
own (`start_http_server`) does a TLS handshake inside `accept`, so one client that opens a
connection and stays silent stalls every scrape, and it starts a thread per connection with no
limit and no deadline. Here each connection has a deadline (the TLS handshake included) and its
own thread, at most MAX_CONNECTIONS at once; one more is closed at once.

Like the agent's own port, it listens on loopback unless told otherwise, and beyond loopback only
with TLS or an explicit `--metrics-insecure`: the metrics say what the server is and does.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from prometheus_client import CollectorRegistry, make_wsgi_app

from dltui.agent.config import ConfigFileError
from dltui.agent.server import is_loopback

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 16
CONNECTION_TIMEOUT = 10.0
"""Seconds a connection may take to finish its TLS handshake, send its request or read the
answer, each."""
PATH = "/metrics"


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


class _Quiet(WSGIRequestHandler):
    timeout = CONNECTION_TIMEOUT

    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes come every few seconds: not worth a log line each."""


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = MAX_CONNECTIONS

    def __init__(self, address: tuple[str, int], family: int, tls: ssl.SSLContext | None) -> None:
        self.address_family = family
        self.tls = tls
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(address, _Quiet)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            log.debug("metrics: refusing %s, %d connections open", client_address,
                      MAX_CONNECTIONS)  # fmt: skip
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # the thread did not start: its place is free again
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            request.settimeout(CONNECTION_TIMEOUT)
            if self.tls is not None:
                try:
                    request = self.tls.wrap_socket(request, server_side=True)
                except (OSError, ssl.SSLError) as exc:
                    log.debug("metrics: TLS handshake with %s failed: %s", client_address, exc)
                    self.shutdown_request(request)
                    return
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("metrics: connection from %s failed", client_address, exc_info=True)


def _only_metrics(app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != PATH:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"metrics are at /metrics\n"]
        return app(environ, start_response)

    return serve


class MetricsServer:
    """/metrics served from a thread of its own until `close`."""

    def __init__(self, options: MetricsOptions, registry: CollectorRegistry) -> None:
        options.check()
        family, _, _, _, address = socket.getaddrinfo(
            options.host, options.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        self._server = _Server((str(address[0]), int(address[1])), family, options.tls)
        # A scrape is tens of kB: gzip would cost the agent more CPU than the bytes cost.
        self._server.set_app(_only_metrics(make_wsgi_app(registry, disable_compression=True)))
        self.port: int = self._server.server_address[1]
        host = f"[{options.host}]" if ":" in options.host else options.host
        self.url = f"{options.scheme}://{host}:{self.port}{PATH}"
        self._closing = False
        self._thread = threading.Thread(target=self._serve, name="dltui-metrics", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        # One request at a time from a select with no timeout: serve_forever's would wake the
        # thread twice a second for nothing. close() wakes it by shutting the socket.
        while not self._closing:
            self._server.handle_request()

    def close(self) -> None:
        self._closing = True
        try:
            self._server.socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # not connected, on some systems: closing is enough
        self._thread.join(5.0)
        self._server.server_close()
