"""A client that never reads its replies: the agent bounds what it queues for it, disconnects
it with an error, and gives the memory back as soon as it is gone, without the garbage
collector (issue #13: 3 M unread pongs grew an agent by 300 MB, held after the disconnect)."""

from __future__ import annotations

import asyncio
import gc
import itertools
import socket
import weakref

from dltui.agent.client_connection import CONTROL_LIMIT
from dltui.agent.server import Agent
from dltui.protocol.framing import encode_frame
from dltui.protocol.inventory import Inventory
from dltui.protocol.messages import PROTOCOL_VERSION, Auth, Ping, Subscribe
from dltui.protocol.wire import to_wire
from tests.conftest import wait_for
from tests.security.hostile import RssWatch, ping_flood, rss

MB = 1 << 20


def test_a_client_that_never_reads_is_disconnected_and_its_memory_given_back(agent_factory):
    agent = agent_factory()
    pid = agent.process.pid
    baseline = rss(pid)
    for round_ in range(2):
        with RssWatch(pid) as watch:
            flood = ping_flood(agent.port, pings=2_000_000)
        # Disconnected once CONTROL_LIMIT bytes of pongs were queued: some 60,000 pings, plus
        # what the sockets hold; before the limit, all 2 M were taken and answered in memory.
        assert flood.disconnected and flood.sent < 1_000_000, flood
        assert flood.seconds < 20, flood
        assert watch.peak - baseline < CONTROL_LIMIT + 20 * MB, (round_, watch.peak, baseline)
        wait_for(lambda: rss(pid) < baseline + 8 * MB, timeout=10, what="the memory back")
    unread = [line for line in agent.log if "bytes of replies unread" in line]
    assert len(unread) == 2, agent.log[-5:]
    assert agent.process.poll() is None


async def test_a_connection_whose_client_vanished_is_freed_by_reference_counting():
    """The writer task met ConnectionResetError while its client was not reading; neither the
    task nor the exception's traceback may keep the agent's ClientConnection (and its queues)
    alive."""
    agent = Agent(Inventory("box", "Linux", "cpu", 1, 1 << 30), 100.0, "test-agent")
    port: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    serving = asyncio.create_task(agent.serve_tcp("127.0.0.1", 0, port.set_result))
    gc.disable()
    try:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # it reads nothing anyway
        sock.connect(("127.0.0.1", await port))
        sock.setblocking(False)
        _, writer = await asyncio.open_connection(sock=sock)
        writer.write(encode_frame(to_wire(Auth(PROTOCOL_VERSION, "vanishes", b"n" * 32))))
        writer.write(encode_frame(to_wire(Subscribe(1, 100.0))))
        writer.transport.pause_reading()  # from here on it reads nothing
        while not agent.connections:
            await asyncio.sleep(0.01)
        (connection,) = agent.connections
        # Pings until the agent's writer is stuck behind full socket and transport buffers
        # and pongs wait in the connection's queue, well short of its limit.
        for seq in itertools.count(2, 500):
            writer.write(b"".join(encode_frame(to_wire(Ping(s, s))) for s in range(seq, seq + 500)))
            await writer.drain()
            await asyncio.sleep(0)
            if connection._control_bytes > 64 << 10:
                break
        connections = weakref.ref(connection)
        del connection
        writer.transport.abort()  # unread data in its buffer: the kernel answers with RST
        deadline = asyncio.get_running_loop().time() + 5
        while connections() is not None and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        assert connections() is None, "a reference cycle keeps a closed ClientConnection"
    finally:
        gc.enable()
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
