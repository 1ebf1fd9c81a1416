"""Agents in network namespaces, as separate hosts with addresses of their own: a scale-out
all-reduce whose rendezvous crosses the bridge, and a partition by taking a link down."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from dltui.client.connection import AgentConnection
from dltui.client.target import parse_target
from dltui.fleet.state import Fleet
from dltui.userfiles import load_secret
from tests.conftest import ROOT, dltui_command, require, wait_until
from tests.netns import Cluster, unavailable

REASON = unavailable()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


def test_all_reduce_across_two_hosts(cluster, secret_file, tmp_path):
    require("torch")
    out = tmp_path / "across.json"
    command = dltui_command(
        "bench", "kernels", "--kind", "allreduce", "--set", "tiny", "--device", "cpu",
        "--gpus", "1", "--max-seconds", "0.2", "--secret-file", str(secret_file),
        "--agent", cluster.address(1), "--agent", cluster.address(2), "--json", str(out),
    )  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert result.returncode == 0, result.stderr + cluster.log(1) + cluster.log(2)
    report = json.loads(out.read_text())
    rendezvous = cluster.address(1).rsplit(":", 1)[0]
    assert [job["plan"]["cluster"]["master_addr"] for job in report["jobs"]] == [rendezvous] * 2
    assert [job["state"] for job in report["jobs"]] == ["done", "done"]
    assert report["results"] and all(r["gbps"] > 0 for r in report["results"])


async def test_a_partition_shows_offline_then_heals(cluster, secret_file):
    fleet = Fleet()
    target = parse_target(cluster.address(1))
    server = fleet.add(target.label)
    connection = AgentConnection(target, fleet.apply, load_secret(secret_file))
    task = asyncio.create_task(connection.run())
    try:
        await wait_until(lambda: server.link == "live" and server.samples > 5, 20, "live")
        cut = time.monotonic()
        cluster.cut(1)  # no FIN, no RST: the client hears silence
        await wait_until(lambda: server.link == "offline", 15, "offline after the cut")
        went_offline = time.monotonic() - cut
        samples = server.samples
        cluster.heal(1)
        await wait_until(lambda: server.link == "live" and server.samples > samples, 30, "back")
        assert went_offline >= 1.0  # the silence limit, not a fault of our own
    finally:
        await connection.stop()
        task.cancel()


def test_hosts_asked_to_keep_to_cpus_of_their_own_do(tmp_path, secret_file):
    """Each host's agent (and so what it starts) in its quota's cgroup, on a CPU of its own."""
    allowed = sorted(os.sched_getaffinity(0))
    cluster = Cluster(2, tmp_path / "cluster", cpu_quota=0.4, own_cpus=True)
    try:
        cluster.start_agents("--secret-file", str(secret_file))
        pids = [int((cluster.run_dir / f"agent-{host}.pid").read_text()) for host in (1, 2)]
        assert [os.sched_getaffinity(pid) for pid in pids] == [
            {allowed[0]},
            {allowed[1 % len(allowed)]},
        ]
        for host, pid in enumerate(pids, 1):
            procs = Path(f"/sys/fs/cgroup/cpu/{cluster.env['PREFIX']}-{host}/cgroup.procs")
            if procs.exists():  # cgroup v1 (v2 keeps it elsewhere)
                assert str(pid) in procs.read_text().split()
    finally:
        cluster.down()
