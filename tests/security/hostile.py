"""Misbehaving clients, as an attacker (or a broken program) would write them, against a real
agent: one that pings and never reads the answers, and a flood of idle connections re-opened
as soon as they close, and a check that the agent has closed a connection. The tests and
benchmarks/hardening.py use the same ones."""

from __future__ import annotations

import itertools
import socket
import threading
import time
from dataclasses import dataclass, field

import psutil

from dltui.protocol.framing import encode_frame
from dltui.protocol.messages import PROTOCOL_VERSION, Auth, Ping
from dltui.protocol.wire import to_wire


@dataclass
class PingFlood:
    """How a client that never read its replies fared."""

    sent: int
    """Pings written before the agent closed the connection (or all of them)."""
    disconnected: bool
    seconds: float


def ping_flood(port: int, pings: int, batch: int = 2000) -> PingFlood:
    """Log in to an agent without a secret and send `pings` pings with rising sequence numbers,
    never reading a byte of what comes back."""
    began = time.monotonic()
    sent = 0
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(encode_frame(to_wire(Auth(PROTOCOL_VERSION, "never-reads", b"n" * 32))))
        try:
            while sent < pings:
                count = min(batch, pings - sent)
                frames = (to_wire(Ping(seq, seq)) for seq in range(sent + 1, sent + count + 1))
                sock.sendall(b"".join(encode_frame(frame) for frame in frames))
                sent += count
        except (BrokenPipeError, ConnectionResetError):
            return PingFlood(sent, True, time.monotonic() - began)
    return PingFlood(sent, False, time.monotonic() - began)


@dataclass
class RssWatch:
    """A process's resident memory, sampled every `interval` seconds in a thread."""

    pid: int
    interval: float = 0.02
    samples: list[int] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> RssWatch:
        process = psutil.Process(self.pid)

        def sample() -> None:
            while not self._stop.wait(self.interval):
                self.samples.append(process.memory_info().rss)

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def peak(self) -> int:
        return max(self.samples, default=0)


def closed_by_server(connection: socket.socket) -> bool:
    """The other end has closed it: a read would give the end of the stream, or an error."""
    connection.setblocking(False)
    try:
        return connection.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        connection.setblocking(True)


def rss(pid: int) -> int:
    return psutil.Process(pid).memory_info().rss


class IdleFlood:
    """`count` TCP connections to an agent that never say a word, each re-opened as soon as the
    agent closes it, from the loopback addresses `sources` in turn (127.0.0.2 and up stand for
    other hosts: Linux answers the whole of 127/8)."""

    def __init__(self, port: int, count: int, sources: list[str]) -> None:
        self.port = port
        self.count = count
        self.sources = sources
        self.opened = 0
        self.closed_by_agent = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> IdleFlood:
        turns = itertools.cycle(self.sources)
        for _, source in zip(range(self.count), turns, strict=False):
            thread = threading.Thread(target=self._hold, args=(source,), daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)

    def _hold(self, source: str) -> None:
        """One connection slot: connect, wait for the agent to close it, connect again."""
        while not self._stop.is_set():
            try:
                sock = socket.create_connection(
                    ("127.0.0.1", self.port), timeout=5, source_address=(source, 0)
                )
            except OSError:
                self._stop.wait(0.01)  # the backlog is full: try again, as an attacker would
                continue
            self.opened += 1
            with sock:
                sock.settimeout(0.2)  # to notice the end of the flood
                while not self._stop.is_set():
                    try:
                        if not sock.recv(4096):  # the hello, an error, then the agent closes
                            break
                    except TimeoutError:
                        continue
                    except OSError:
                        break
                else:
                    return
            self.closed_by_agent += 1
