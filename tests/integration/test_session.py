"""The client session against real agents: its one policy for waiting on agents, its fan-out to
sinks, and a close that leaves nothing behind."""

from __future__ import annotations

import asyncio
import socket
import time

import psutil
import pytest

from dltui.client.session import ClientSession, Unreachable
from dltui.client.target import Target, parse_target
from dltui.protocol.messages import ConnectionState, Message, Sample, Welcome
from dltui.userfiles import load_secret
from tests.conftest import free_port


def local_agents() -> list[psutil.Process]:
    """This process's `dltui agent --stdio` children that are still running."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "--stdio" in child.cmdline() and child.status() != psutil.STATUS_ZOMBIE:
                found.append(child)
        except psutil.NoSuchProcess:
            pass
    return found


async def test_frames_reach_every_sink_in_order_and_close_stops_the_local_agent():
    seen: list[list[Message]] = [[], []]
    session = ClientSession([Target("local")], rate_hz=10.0)
    session.subscribe(lambda source, message: seen[0].append(message))
    session.subscribe(lambda source, message: seen[1].append(message))
    async with session:
        await session.welcomed()
        assert list(session.welcomes()) == ["local"]
        assert session.names() == {"local": socket.gethostname()}
        await session.until(lambda: sum(isinstance(m, Sample) for m in seen[0]) >= 3, 15)
        assert local_agents()
    assert seen[0] == seen[1]
    kinds = [type(m) for m in seen[0]]
    assert kinds[:2] == [
        ConnectionState,
        Welcome,
    ]  # connecting, then who it is, then live and samples
    assert not local_agents()


async def test_an_unreachable_agent_ends_the_wait_at_once():
    target = parse_target(f"127.0.0.1:{free_port()}")
    began = time.monotonic()
    async with ClientSession([Target("local"), target]) as session:
        with pytest.raises(Unreachable) as raised:
            await session.welcomed()
    assert raised.value.target == target and not raised.value.refused
    assert raised.value.kind == "unreachable" and "connection refused" in str(raised.value)
    assert time.monotonic() - began < 10  # told now, not after the local agent's welcome too


async def test_a_wrong_secret_is_a_refusal_said_at_once_and_closed_at_once(
    agent_factory, secret_file, tmp_path
):
    agent = agent_factory("--secret-file", str(secret_file))
    wrong = tmp_path / "wrong"
    wrong.write_text("another-secret-of-enough-length")
    wrong.chmod(0o600)
    session = ClientSession([parse_target(agent.address)], load_secret(wrong))
    began = time.monotonic()
    async with session:
        with pytest.raises(Unreachable) as raised:
            await session.welcomed()
    # The connection sleeps 10 s before it tries again: closing does not wait for that.
    assert time.monotonic() - began < 5
    assert raised.value.refused and raised.value.kind == "refused"
    assert f"{agent.address} refused the connection" in str(raised.value)


async def test_two_agents_on_one_host_are_named_by_address_too(agent_factory):
    agents = [agent_factory(), agent_factory()]
    targets = [parse_target(agent.address) for agent in agents]
    async with ClientSession(targets, rate_hz=1.0) as session:
        await session.welcomed()
        host = socket.gethostname()
        assert session.names() == {a.address: f"{host}@{a.address}" for a in agents}


async def test_a_connection_that_dies_of_a_bug_says_offline(monkeypatch):
    async def broken(self) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr("dltui.client.connection.AgentConnection.run", broken)
    links: list[ConnectionState] = []
    session = ClientSession([Target("local")])
    session.subscribe(lambda source, m: links.append(m) if isinstance(m, ConnectionState) else None)
    session.start()
    with pytest.raises(Unreachable, match="client error: RuntimeError"):
        await asyncio.wait_for(session.welcomed(), 10)
    await session.close()
    assert [link.state for link in links] == ["offline"]


async def test_a_session_closed_as_its_connection_opens_ends_at_once(monkeypatch):
    """Ctrl-C as the connection opened waited out the handshake (5 s in 2 of 5 probes): Python
    3.11's wait_for dropped a cancel that came with the open connection's result."""
    monkeypatch.setattr("dltui.client.session.STOP_TIMEOUT", 60.0)  # the cancel must do it

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # never says hello; ends when the client has gone
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    address = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    async with server:
        for steps in range(40):  # close after each number of loop steps: one is in the gap
            session = ClientSession([parse_target(address)], rate_hz=10.0)
            session.start()
            for _ in range(steps):
                await asyncio.sleep(0)
            async with asyncio.timeout(5):  # the handshake's own limit is 10 s
                await session.close()
