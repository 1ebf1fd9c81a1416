"""/metrics against its neighbours: one address holding 64 keep-alive connections (re-opened as
soon as they are closed) and a connection with 64 requests sent ahead and never read, while a
scraper from another address scrapes and a client takes the telemetry stream. The scraper gets
every scrape within its interval, and the stream keeps its rate."""

from __future__ import annotations

import asyncio
import http.client
import itertools
import re
import socket
import threading
import time

from dltui.agent.metrics_budget import PER_ADDRESS
from dltui.protocol.messages import Sample, Subscribe
from tests.agents import connect, metrics_url
from tests.conftest import wait_for
from tests.security.hostile import RssWatch, closed_by_server

REQUEST = b"GET /metrics HTTP/1.1\r\nHost: agent\r\n\r\n"
FLOOD = 64
SCRAPES = 8
INTERVAL = 1.0
RATE_HZ = 10.0


def answer(sock: socket.socket) -> bytes:
    """One whole HTTP answer read from `sock` (ConnectionError when it closes first)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += _more(sock)
    head, body = data.split(b"\r\n\r\n", 1)
    found = re.search(rb"content-length: *(\d+)", head, re.IGNORECASE)
    assert found is not None, head
    while len(body) < int(found.group(1)):
        body += _more(sock)
    return head


def _more(sock: socket.socket) -> bytes:
    chunk = sock.recv(1 << 16)
    if not chunk:
        raise ConnectionError("closed")
    return chunk


class Neighbours:
    """The hostile ones, on threads: a keep-alive flood from 127.0.0.1 and a pipeliner from
    127.0.0.3 that never reads."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.stop = threading.Event()
        self.tries = 0
        self.held = 0
        self.threads = [threading.Thread(target=self._flood, daemon=True)]

    def _open(self, source: str) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), 5, (source, 0))

    def _flood(self) -> None:
        held: list[socket.socket | None] = [None] * FLOOD
        while not self.stop.is_set():
            for index, sock in enumerate(held):
                if sock is not None and not closed_by_server(sock):
                    continue
                if sock is not None:
                    sock.close()
                self.tries += 1
                try:
                    held[index] = sock = self._open("127.0.0.1")
                    sock.sendall(REQUEST)
                    answer(sock)  # and then it sits there, kept alive
                except OSError:
                    held[index] = None
            self.held = sum(s is not None and not closed_by_server(s) for s in held)
            self.stop.wait(0.01)  # the attacker's pace: re-open what was closed at once
        for sock in held:
            if sock is not None:
                sock.close()

    def pipeline(self) -> socket.socket:
        sock = self._open("127.0.0.3")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(REQUEST * 64)  # never read
        return sock


def test_a_scraper_and_the_stream_hold_against_a_flood_and_a_pipeline(agent_factory):
    agent = agent_factory("--metrics", "127.0.0.1:0", "--rate", str(RATE_HZ))
    port = int(metrics_url(agent).rsplit(":", 1)[1].split("/")[0])
    neighbours = Neighbours(port)
    pipelined = neighbours.pipeline()
    for thread in neighbours.threads:
        thread.start()
    scrapes: list[float] = []

    def scrape() -> None:  # as Prometheus: one connection kept open, a scrape each interval
        scraper = http.client.HTTPConnection("127.0.0.1", port, timeout=INTERVAL,
                                             source_address=("127.0.0.2", 0))  # fmt: skip
        next_at = time.monotonic()
        for _ in range(SCRAPES):
            began = time.monotonic()
            scraper.request("GET", "/metrics")
            response = scraper.getresponse()
            assert response.status == 200 and b"dltui_agent_info" in response.read()
            scrapes.append(time.monotonic() - began)
            next_at += INTERVAL
            time.sleep(max(0.0, next_at - time.monotonic()))  # ok: a scrape interval
        scraper.close()

    async def stream() -> list[Sample]:
        client, _ = await connect(agent.address)
        await client.stream.send(Subscribe(1, RATE_HZ))
        samples: list[Sample] = []
        while scraping.is_alive():
            message = await asyncio.wait_for(client.stream.receive(), 5)
            if isinstance(message, Sample):
                samples.append(message)
        await client.close()
        return samples

    try:
        wait_for(lambda: neighbours.tries >= FLOOD, what="the flood at full strength")
        with RssWatch(agent.process.pid) as rss:
            scraping = threading.Thread(target=scrape)
            scraping.start()
            samples = asyncio.run(stream())
            scraping.join()
    finally:
        neighbours.stop.set()
        for thread in neighbours.threads:
            thread.join()
        pipelined.close()
    assert len(scrapes) == SCRAPES and max(scrapes) < INTERVAL, scrapes
    assert neighbours.held <= PER_ADDRESS  # the flood kept only its address's share
    span = samples[-1].mono - samples[0].mono
    gaps = [b.mono - a.mono for a, b in itertools.pairwise(samples)]
    assert (len(samples) - 1) / span > 0.8 * RATE_HZ and max(gaps) < 0.5, (len(samples), span)
    assert rss.peak - rss.samples[0] < 20 << 20  # answers do not pile up in the agent
