"""Connections that have not logged in have a budget of their own (agent/admission.py): per
address, in total, and in time; logged-in clients keep theirs. A flood of idle connections
cannot lock a client with the secret out (issue #13: 128 idle connections kept `dltui probe`
out for 60 s), and a client told `busy` says so and tries again."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time

import pytest

from dltui.agent import server
from dltui.agent.admission import Admission, source_of
from dltui.client.connection import AgentBusy
from dltui.protocol.framing import FrameDecoder
from dltui.protocol.inventory import Inventory
from dltui.protocol.messages import Ping, Pong
from tests.agents import connect
from tests.conftest import ROOT, dltui_command, wait_for
from tests.security.hostile import IdleFlood


@pytest.fixture
async def small_agent():
    """An agent in this process whose admission is small and quick: (agent, its port)."""
    agent = server.Agent(Inventory("box", "Linux", "cpu", 1, 1 << 30), 10.0, "test-agent")
    agent.admission = Admission(per_source=2, total=4, deadline=0.5)
    port: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    serving = asyncio.create_task(agent.serve_tcp("127.0.0.1", 0, port.set_result))
    yield agent, await port
    serving.cancel()
    await asyncio.gather(serving, return_exceptions=True)


class Idle:
    """A connection that says nothing, from a loopback address of its own choosing."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.decoder = reader, writer, FrameDecoder()

    @classmethod
    async def open(cls, port: int, source: str) -> Idle:
        return cls(*await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0)))

    async def frames(self, timeout: float = 5.0) -> list[tuple[str, str | None]]:
        """(type, error code) of each frame until the agent closes the connection."""
        frames = []
        while data := await asyncio.wait_for(self.reader.read(65536), timeout):
            frames += [(f["type"], f.get("code")) for f in self.decoder.feed(data)]
        return frames

    async def hello(self) -> None:
        """Wait for the agent's hello: the connection has its place."""
        while not (found := self.decoder.feed(await asyncio.wait_for(self.reader.read(4096), 5))):
            pass
        assert found[0]["type"] == "hello", found

    def close(self) -> None:
        self.writer.close()


async def test_one_address_gets_a_few_places_and_the_next_is_told_busy(small_agent):
    agent, port = small_agent
    held = [await Idle.open(port, "127.0.0.2") for _ in range(2)]
    for idle in held:
        await idle.hello()
    one_more = await Idle.open(port, "127.0.0.2")
    assert await one_more.frames() == [("error", "busy")]
    elsewhere = await Idle.open(port, "127.0.0.3")
    await elsewhere.hello()
    assert agent.admission.count == 3
    for idle in (*held, elsewhere):
        idle.close()


async def test_when_all_places_are_taken_the_fullest_address_gives_its_oldest(small_agent):
    _, port = small_agent
    crowd = [await Idle.open(port, source) for source in ("127.0.0.2", "127.0.0.2",
                                                          "127.0.0.3", "127.0.0.4")]  # fmt: skip
    for idle in crowd:
        await idle.hello()
    newcomer = await Idle.open(port, "127.0.0.5")
    await newcomer.hello()
    assert await crowd[0].frames() == [("error", "busy")]
    for idle in (*crowd[1:], newcomer):
        idle.close()


async def test_a_connection_that_does_not_log_in_in_time_is_closed(small_agent):
    _, port = small_agent
    loop = asyncio.get_running_loop()
    began = loop.time()
    idle = await Idle.open(port, "127.0.0.2")
    assert await idle.frames() == [("hello", None), ("error", "timeout")]
    assert 0.4 < loop.time() - began < 3.0


async def test_logged_in_clients_are_outside_that_budget(small_agent):
    agent, port = small_agent
    client, _ = await connect(f"127.0.0.1:{port}")
    crowd = [await Idle.open(port, f"127.0.0.{i}") for i in range(2, 8)]  # pushes out, times out
    assert await crowd[-1].frames() == [("hello", None), ("error", "timeout")]
    await client.stream.send(Ping(1, 7))
    while not isinstance(pong := await asyncio.wait_for(client.stream.receive(), 5), Pong):
        pass
    assert pong.token == 7 and agent.admission.count == 0
    await client.close()


async def test_past_the_clients_budget_one_more_is_told_busy(small_agent, monkeypatch):
    monkeypatch.setattr(server, "MAX_CONNECTIONS", 2)
    _, port = small_agent
    clients = [(await connect(f"127.0.0.1:{port}"))[0] for _ in range(2)]
    with pytest.raises(AgentBusy, match="agent busy: the agent serves 2 clients already"):
        await connect(f"127.0.0.1:{port}")
    await clients[0].close()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while True:  # room again once the agent has seen it go
        try:
            client, _ = await connect(f"127.0.0.1:{port}")
            break
        except AgentBusy:
            assert loop.time() < deadline
            await asyncio.sleep(0.02)
    for one in (client, clients[1]):
        await one.close()


@pytest.mark.parametrize(
    ("host", "source"),
    [("192.0.2.7", "192.0.2.7"), ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
     ("::ffff:192.0.2.7", "192.0.2.7"), ("fe80::1%eth0", "fe80::/64")],
)  # fmt: skip
def test_an_ipv6_host_is_counted_by_its_64(host, source):
    assert source_of(host) == source


def probe(agent, secret_file) -> subprocess.CompletedProcess[str]:
    command = dltui_command("probe", agent.address, "--secret-file", str(secret_file))
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)


def test_a_flood_of_idle_connections_does_not_lock_out_a_client(agent_factory, secret_file):
    """128 idle connections from 16 addresses, each re-opened as soon as the agent closes it,
    against an agent with a secret: probe with the secret still gets in, in about its usual
    time (before the admission budget: 0 of 24 tries in 60 s, "refused the connection")."""
    agent = agent_factory("--secret-file", str(secret_file))
    sources = [f"127.0.0.{2 + i}" for i in range(16)]
    with IdleFlood(agent.port, 128, sources) as flood:
        wait_for(lambda: flood.closed_by_agent > 128, timeout=20, what="the flood to churn")
        for _ in range(2):
            began = time.monotonic()
            result = probe(agent, secret_file)
            took = time.monotonic() - began
            assert result.returncode == 0, result.stderr
            assert took < 10, took  # about 1.8 s; alone, about 1.5 s (it waits 1.2 s to settle)
    assert flood.opened > 256 and agent.process.poll() is None
    assert any("turned away" in line for line in agent.log)


def test_probe_says_busy_and_tries_again(agent_factory):
    agent = agent_factory()
    idle = []
    for _ in range(8):  # every place for 127.0.0.1: probe's first try is turned away
        sock = socket.create_connection(("127.0.0.1", agent.port))
        assert sock.recv(4096)  # its hello: it has its place
        idle.append(sock)
    prober = subprocess.Popen(
        dltui_command("probe", agent.address), cwd=ROOT, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    wait_for(lambda: any("turned away" in line for line in agent.log), timeout=20)
    for sock in idle:
        sock.close()
    _, err = prober.communicate(timeout=60)
    assert prober.returncode == 0, err
    assert "agent busy: too many connections from your address" in err
    assert "trying again" in err and "refused" not in err
