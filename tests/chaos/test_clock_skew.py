"""Agents whose clocks are off by ±30 s (libfaketime, preloaded into the agent alone): the
client places every sample on its own clock, from the first one on, and the TUI says how far
off each server's clock is."""

from __future__ import annotations

import asyncio
import glob
import time

import pytest

from dltui.client.connection import AgentConnection
from dltui.client.target import parse_target
from dltui.fleet.state import Fleet
from tests.conftest import wait_until

LIBFAKETIME = next(iter(sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))), None)
pytestmark = pytest.mark.skipif(
    LIBFAKETIME is None, reason="libfaketime is not installed (Debian: libfaketime; .ci/run)"
)
SKEWS = {"ahead": 30.0, "behind": -30.0}


@pytest.fixture
def skewed_agents(agent_factory, monkeypatch):
    agents = {}
    for name, skew in SKEWS.items():
        with monkeypatch.context() as env:
            env.setenv("LD_PRELOAD", LIBFAKETIME)
            env.setenv("FAKETIME", f"{skew:+.0f}s")
            env.setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1")
            agents[name] = agent_factory()
    return agents


async def test_series_from_skewed_agents_line_up_on_the_client_clock(skewed_agents):
    began = time.time()
    fleet = Fleet()
    for name in SKEWS:
        fleet.add(name)
    connections = [
        AgentConnection(parse_target(agent.address), fleet.apply, source=name)
        for name, agent in skewed_agents.items()
    ]
    tasks = [asyncio.create_task(c.run()) for c in connections]
    try:
        await wait_until(
            lambda: all(s.samples >= 20 for s in fleet.servers.values()), 20, "samples"
        )
    finally:
        for connection in connections:
            await connection.stop()
        for task in tasks:
            task.cancel()
    now = time.time()
    for name, skew in SKEWS.items():
        server = fleet.servers[name]
        assert server.offset == pytest.approx(skew, abs=0.5), name
        # Every point, the first included, is on the client's clock: within the test's time.
        times = [t for t, _ in server.host["cpu"].points()]
        assert began - 0.5 <= min(times) and max(times) <= now + 0.5, (name, times[:3])
    ahead, behind = (fleet.servers[name].host["cpu"].last_time() for name in SKEWS)
    assert abs(ahead - behind) < 1.0


async def test_the_tui_shows_each_servers_clock_skew(skewed_agents):
    from dltui.tui import create_app
    from tests.tui.pilot import wait_for_text

    app = create_app([parse_target(agent.address) for agent in skewed_agents.values()])
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for_text(pilot, r"clock \+(29\.9|30\.0|30\.1) s", 20)
        await wait_for_text(pilot, r"clock -(29\.9|30\.0|30\.1) s", 20)
