"""Soak: many agents streaming into one client for a long time; nothing may grow, nothing be lost.

Starts N real agent processes on loopback at RATE Hz and connects one client to all of them
(the TUI's own path: one AgentConnection each, into a Fleet). Every minute it prints the
client's RSS, open files and threads, and one agent's; at the end, per agent, the samples
the client received against the sequence numbers the agent sent, less the samples the agent
reported dropped for this client (its pongs count them): anything left over was lost.

    python benchmarks/soak.py [--agents 16] [--rate 10] [--minutes 10] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dltui.client.connection import AgentConnection  # noqa: E402
from dltui.client.target import parse_target  # noqa: E402
from dltui.fleet.state import Fleet  # noqa: E402
from dltui.protocol.messages import ConnectionState, Message, Pong, Sample  # noqa: E402

WARM_UP_S = 130.0
"""The fleet's ring buffers hold two minutes: the start figures are taken once they are full."""


def start_agent(rate: float) -> tuple[subprocess.Popen[bytes], int]:
    process = subprocess.Popen(
        [sys.executable, "-m", "dltui", "agent", "--listen", "127.0.0.1:0", "--rate", str(rate)],
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=os.environ | {"PYTHONPATH": str(ROOT)},
    )
    assert process.stderr is not None
    for raw in process.stderr:
        match = re.search(rb"listening on \S+:(\d+)", raw)
        if match:
            # Keep draining, so the agent never blocks on a full stderr pipe.
            threading.Thread(target=process.stderr.read, daemon=True).start()
            return process, int(match.group(1))
    raise RuntimeError("an agent did not start")


@dataclass
class Tally:
    """What one agent's stream looked like to the client."""

    first_seq: int | None = None
    last_seq: int | None = None
    received: int = 0
    out_of_order: int = 0
    dropped: int = 0
    """The agent's own count, from its latest pong."""
    offline: int = 0
    """Times the link went down (each costs the samples sent while it was)."""

    @property
    def lost(self) -> int:
        if self.first_seq is None or self.last_seq is None:
            return 0
        return (self.last_seq - self.first_seq + 1) - self.received - self.dropped


@dataclass
class Figures:
    elapsed_s: float
    client_rss_mb: float
    client_fds: int
    client_threads: int
    agent_rss_mb: float
    agent_fds: int
    agent_threads: int


def figures(began: float, client: psutil.Process, agent: psutil.Process) -> Figures:
    return Figures(
        round(time.monotonic() - began, 1),
        round(client.memory_info().rss / 1e6, 1),
        client.num_fds(),
        client.num_threads(),
        round(agent.memory_info().rss / 1e6, 1),
        agent.num_fds(),
        agent.num_threads(),
    )


async def soak(agents: int, rate: float, seconds: float) -> dict:
    started = [start_agent(rate) for _ in range(agents)]
    fleet = Fleet()
    tallies = {f"127.0.0.1:{port}": Tally() for _, port in started}

    def receive(source: str, message: Message) -> None:
        fleet.apply(source, message)
        tally = tallies[source]
        if isinstance(message, Sample):
            if tally.last_seq is not None and message.seq <= tally.last_seq:
                tally.out_of_order += 1
                return
            tally.first_seq = message.seq if tally.first_seq is None else tally.first_seq
            tally.last_seq = message.seq
            tally.received += 1
        elif isinstance(message, Pong):
            tally.dropped = message.dropped
        elif isinstance(message, ConnectionState) and message.state == "offline":
            tally.offline += 1

    connections = [
        AgentConnection(parse_target(source), receive, rate_hz=rate) for source in tallies
    ]
    tasks = [asyncio.create_task(connection.run()) for connection in connections]
    client = psutil.Process()
    agent = psutil.Process(started[0][0].pid)
    began = time.monotonic()
    timeline: list[Figures] = []
    try:
        await asyncio.sleep(WARM_UP_S)
        timeline.append(figures(began, client, agent))
        print(_row(timeline[-1]), flush=True)
        deadline = began + WARM_UP_S + seconds
        while (left := deadline - time.monotonic()) > 0:
            await asyncio.sleep(min(60.0, left))
            timeline.append(figures(began, client, agent))
            print(_row(timeline[-1]), flush=True)
    finally:
        await asyncio.gather(*(connection.stop() for connection in connections))
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for process, _ in started:
            process.terminate()
        for process, _ in started:
            process.wait(timeout=20)
    return {
        "agents": agents,
        "rate_hz": rate,
        "seconds": seconds,
        "timeline": [asdict(f) for f in timeline],
        "streams": {source: asdict(t) | {"lost": t.lost} for source, t in tallies.items()},
    }


def _row(f: Figures) -> str:
    return (
        f"t={f.elapsed_s:7.1f}s  client rss {f.client_rss_mb:6.1f} MB  fds {f.client_fds:3d}  "
        f"threads {f.client_threads:2d}   agent rss {f.agent_rss_mb:6.1f} MB  "
        f"fds {f.agent_fds:3d}  threads {f.agent_threads:2d}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=16)
    parser.add_argument("--rate", type=float, default=10.0)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--json", type=Path, metavar="OUT")
    args = parser.parse_args()
    print(f"# {args.agents} agents at {args.rate:g} Hz into one client for {args.minutes:g} min "
          f"(after {WARM_UP_S:g} s of warm-up); {os.cpu_count()} CPUs")  # fmt: skip
    report = asyncio.run(soak(args.agents, args.rate, args.minutes * 60))
    first, last = report["timeline"][0], report["timeline"][-1]
    streams = report["streams"].values()
    received = sum(s["received"] for s in streams)
    dropped = sum(s["dropped"] for s in streams)
    lost = sum(s["lost"] for s in streams)
    disorder = sum(s["out_of_order"] for s in streams)
    reconnects = sum(s["offline"] for s in streams)
    for name in ("client_rss_mb", "client_fds", "client_threads", "agent_rss_mb", "agent_fds",
                 "agent_threads"):  # fmt: skip
        print(f"{name:<16} start {first[name]:>8}  end {last[name]:>8}")
    print(f"samples received {received}, dropped by agents (counted) {dropped}, "
          f"lost uncounted {lost}, out of order {disorder}, reconnects {reconnects}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 1 if lost or disorder else 0


if __name__ == "__main__":
    raise SystemExit(main())
