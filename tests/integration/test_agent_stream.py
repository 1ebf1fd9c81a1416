"""A real agent process on loopback, real sockets, real clients."""

from __future__ import annotations

import asyncio
import itertools
import signal
import socket
import statistics
import time

import pytest

from dltui.protocol.errors import AuthError
from dltui.protocol.messages import Bye, Ping, Pong, Sample, Subscribe
from tests.agents import collect_samples, connect


async def samples_spanning(stream, seconds: float) -> list[Sample]:
    """Samples until they span `seconds` of the agent's clock, however long that takes here."""
    samples: list[Sample] = []
    while len(samples) < 2 or samples[-1].mono - samples[0].mono < seconds:
        message = await asyncio.wait_for(stream.receive(), 10)
        if isinstance(message, Sample):
            samples.append(message)
    return samples


async def on_time_runs(streams, rate: float, seconds: float = 2.0) -> list[list[Sample]]:
    """Each stream's samples over the first `seconds` window, of ten at most, in which the agent
    made its `rate` ticks a second, judged on the first stream (subscribed at that rate). seq
    counts the ticks the agent made, and a starved agent drops the ones it missed: a window of
    those says nothing of how each client is served (a saturated fresh clone read 11 of 20)."""
    made: list[float] = []
    for _ in range(10):
        runs = await asyncio.gather(*(samples_spanning(stream, seconds) for stream in streams))
        fastest = runs[0]
        made.append((fastest[-1].seq - fastest[0].seq) / (fastest[-1].mono - fastest[0].mono))
        if made[-1] >= 0.9 * rate:
            return runs
    raise AssertionError(f"the agent never made its {rate:g} ticks a second for {seconds} s: "
                         f"{made}")  # fmt: skip


async def test_samples_arrive_at_each_clients_rate(agent_factory):
    """Every tick at the agent's rate; below it, the asked rate on average, on the ticks."""
    agent = agent_factory("--rate", "20")
    clients = {rate: await connect(agent.address) for rate in (20.0, 7.0, 5.0)}
    _, welcome = clients[20.0]
    assert welcome.inventory.hostname == socket.gethostname()
    assert welcome.rate_hz == 20
    for rate, (client, _) in clients.items():
        await client.stream.send(Subscribe(1, rate))
    runs = await on_time_runs([client.stream for client, _ in clients.values()], 20)
    for rate, samples in zip(clients, runs, strict=True):
        per_second = (len(samples) - 1) / (samples[-1].mono - samples[0].mono)
        assert per_second == pytest.approx(rate, rel=0.15), (rate, per_second)
        ticks = [b.seq - a.seq for a, b in itertools.pairwise(samples)]
        assert statistics.mean(ticks) == pytest.approx(20 / rate, rel=0.15), (rate, ticks)
        if rate == 20:
            assert set(ticks) == {1}, ticks  # every sample the agent reads
            continue
        # Due one period apart on a schedule of their own (ClientConnection._wants): a tick
        # read late may be followed closely by the next one due, never by two, so any three
        # span more than a period less half a tick. (Counted in ticks instead, a sampler that
        # drops the ticks it was too late for brought two 5 Hz samples 2 ticks apart.)
        spans = [c.mono - a.mono for a, c in zip(samples, samples[2:], strict=False)]
        assert min(spans) > 1 / rate - 0.5 / 20, (rate, spans)
    fast_samples = runs[0]
    hosts = [sample.host for sample in fast_samples]
    assert all(0.0 <= host.values["cpu"] <= 100.0 for host in hosts)
    assert all(len(host.cpu_per_core) == welcome.inventory.cpu_count for host in hosts)
    assert hosts[-1].values["mem_total"] == welcome.inventory.memory_total
    for client, _ in clients.values():
        await client.close()


async def timed_samples(stream, seconds: float) -> list[tuple[float, Sample]]:
    """Samples spanning `seconds` of the agent's clock, each with how long after it was read it
    arrived (agent and test read the same monotonic clock)."""
    timed: list[tuple[float, Sample]] = []
    while len(timed) < 2 or timed[-1][1].mono - timed[0][1].mono < seconds:
        message = await asyncio.wait_for(stream.receive(), 10)
        if isinstance(message, Sample):
            timed.append((time.monotonic() - message.mono, message))
    return timed


def arrivals(timed: list[tuple[float, Sample]], within: float) -> list[int]:
    """How many samples arrived together (each within `within` seconds of the one before),
    arrival by arrival."""
    groups: list[int] = []
    last = float("-inf")
    for wait, sample in timed:
        arrived = sample.mono + wait
        if arrived - last > within:
            groups.append(0)
        groups[-1] += 1
        last = arrived
    return groups


async def test_samples_come_in_batches_as_long_as_every_client_allows(agent_factory):
    """A client that lets samples wait half a second gets every tick, in batches; once another
    client wants each sample as it is read, both get them so."""
    agent = agent_factory("--rate", "20")
    patient, _ = await connect(agent.address)
    await patient.stream.send(Subscribe(1, 20.0, 0.5))
    batched = await timed_samples(patient.stream, 2.0)
    ticks = [b.seq - a.seq for (_, a), (_, b) in itertools.pairwise(batched)]
    assert set(ticks) == {1}, ticks  # every tick, none lost
    waits = [wait for wait, _ in batched]
    assert statistics.median(waits) >= 0.15, waits  # 0 to 0.5 s: the batch's age
    assert max(waits) < 0.5 + 2.0, waits  # sent once the oldest is 0.5 s old (slack: a loaded CI)
    # A batch is read at once, so fewer than one arrival a tick is 50 ms or more after the last.
    apart = len(arrivals(batched, within=0.04)) - 1
    assert apart <= len(batched) / 4, (apart, len(batched))

    eager, _ = await connect(agent.address)
    await eager.stream.send(Subscribe(1, 20.0))
    prompt, late = await asyncio.gather(*(timed_samples(c.stream, 2.0) for c in (eager, patient)))
    # The eager client's samples come one at a time (a stalled machine can bunch a few, once),
    one_by_one = arrivals(prompt, within=0.01)
    assert statistics.median(one_by_one) == 1, one_by_one
    # and, read after it came, the patient's with them, not up to 0.5 s later (a stall delays
    # both alike: their difference is what is asserted).
    eager_waits = {sample.seq: wait for wait, sample in prompt}
    behind = [
        wait - eager_waits[s.seq] for wait, s in late[len(late) // 2 :] if s.seq in eager_waits
    ]
    assert behind and statistics.median(behind) < 0.1, behind
    for client in (patient, eager):
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
    await client.stream.send(Subscribe(1, 10.0, 0.3))  # batches: frames sealed one by one
    batched = await samples_spanning(client.stream, 1.0)
    assert [b.seq - a.seq for a, b in itertools.pairwise(batched)] == [1] * (len(batched) - 1)
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
