"""A real agent process on loopback, real sockets, real clients."""

from __future__ import annotations

import asyncio
import itertools
import signal
import socket
import statistics

import pytest

from dltui.client.connection import handshake
from dltui.client.target import parse_target
from dltui.client.transport import open_transport
from dltui.protocol.errors import AuthError
from dltui.protocol.messages import Bye, Ping, Pong, Sample, Subscribe


async def connect(address: str, secret: bytes | None = None):
    transport = await open_transport(parse_target(address))
    welcome = await handshake(transport.stream, secret, "test")
    return transport, welcome


async def collect_samples(stream, seconds: float) -> list[Sample]:
    samples: list[Sample] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while (left := deadline - loop.time()) > 0:
        try:
            message = await asyncio.wait_for(stream.receive(), left)
        except TimeoutError:
            break
        if isinstance(message, Sample):
            samples.append(message)
    return samples


async def samples_spanning(stream, seconds: float) -> list[Sample]:
    """Samples until they span `seconds` of the agent's clock, however long that takes here."""
    samples: list[Sample] = []
    while len(samples) < 2 or samples[-1].mono - samples[0].mono < seconds:
        message = await asyncio.wait_for(stream.receive(), 10)
        if isinstance(message, Sample):
            samples.append(message)
    return samples


async def test_samples_arrive_at_each_clients_rate(agent_factory):
    """Every tick at the agent's rate; below it, the asked rate on average, on the ticks."""
    agent = agent_factory("--rate", "20")
    clients = {rate: await connect(agent.address) for rate in (20.0, 7.0, 5.0)}
    _, welcome = clients[20.0]
    assert welcome.inventory.hostname == socket.gethostname()
    assert welcome.rate_hz == 20
    for rate, (client, _) in clients.items():
        await client.stream.send(Subscribe(1, rate))
    runs = await asyncio.gather(*(samples_spanning(c.stream, 2.0) for c, _ in clients.values()))
    for rate, samples in zip(clients, runs, strict=True):
        per_second = (len(samples) - 1) / (samples[-1].mono - samples[0].mono)
        assert per_second == pytest.approx(rate, rel=0.15), (rate, per_second)
        ticks = [b.seq - a.seq for a, b in itertools.pairwise(samples)]
        assert statistics.mean(ticks) == pytest.approx(20 / rate, rel=0.15), (rate, ticks)
        assert min(ticks) >= int(20 / rate)  # never two samples closer than the ticks allow
    fast_samples = runs[0]
    hosts = [sample.host for sample in fast_samples]
    assert all(0.0 <= host.values["cpu"] <= 100.0 for host in hosts)
    assert all(len(host.cpu_per_core) == welcome.inventory.cpu_count for host in hosts)
    assert hosts[-1].values["mem_total"] == welcome.inventory.memory_total
    for client, _ in clients.values():
        await client.close()


async def test_ping_pong_and_sequence_numbers(agent_factory):
    agent = agent_factory()
    client, _ = await connect(agent.address)
    await client.stream.send(Ping(5, 42))
    pong = await client.stream.receive()
    assert isinstance(pong, Pong) and pong.token == 42 and pong.dropped == 0
    await client.stream.send(Ping(5, 43))  # a replayed sequence number
    error = await client.stream.receive()
    assert error.TYPE == "error" and error.code == "protocol" and "sequence" in error.message
    with pytest.raises(EOFError):
        await client.stream.receive()
    await client.close()


async def test_secret_handshake(agent_factory, secret_file):
    from dltui.userfiles import load_secret

    agent = agent_factory("--secret-file", str(secret_file))
    secret = load_secret(secret_file)
    client, welcome = await connect(agent.address, secret)
    assert welcome.proof is not None
    await client.close()
    with pytest.raises(AuthError, match="wrong secret"):
        await connect(agent.address, b"not-the-secret-at-all")
    with pytest.raises(AuthError, match="requires a secret"):
        await connect(agent.address, None)


async def test_agent_says_bye_and_exits_cleanly_on_sigterm(agent_factory):
    agent = agent_factory()
    client, _ = await connect(agent.address)
    await client.stream.send(Subscribe(1, 10.0))
    await collect_samples(client.stream, 0.3)
    agent.process.send_signal(signal.SIGTERM)

    async def until_bye() -> Bye:
        while not isinstance(message := await client.stream.receive(), Bye):
            pass
        return message

    bye = await asyncio.wait_for(until_bye(), 10)
    assert "shutting down" in bye.reason
    assert await asyncio.to_thread(agent.process.wait, 10) == 0
    await client.close()


def test_refuses_non_loopback_listen_without_secret(agent_factory):
    agent = agent_factory(listen="0.0.0.0:0", wait=False)
    assert agent.process.wait(timeout=20) == 2
    assert any("not loopback" in line and "--secret-file" in line for line in agent.log)
