"""One all-reduce across two real agents on loopback: ranks and rendezvous from the client,
Gloo between the agents' CPU processes. If one agent's part dies, the run stops on both."""

from __future__ import annotations

import json
import subprocess
import threading

import psutil
import pytest

from tests.agents import assert_stopped_on_both
from tests.conftest import ROOT, SLOW, dltui_command, rendezvous_port, require, wait_for

require("torch")
pytestmark = SLOW


def bench_across(agents, *args: str) -> list[str]:
    command = dltui_command("bench", "kernels", "--kind", "allreduce", "--device", "cpu",
                            "--rendezvous", f"127.0.0.1:{rendezvous_port()}")  # fmt: skip
    for agent in agents:
        command += ["--agent", agent.address]
    return command + list(args)


def test_all_reduce_across_two_agents(agent_factory, tmp_path):
    first, second = agent_factory(), agent_factory()
    out = tmp_path / "across.json"
    command = bench_across(
        (first, second), "--set", "tiny", "--gpus", "1", "--max-seconds", "0.2",
        "--json", str(out),
    )  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert result.returncode == 0, result.stderr
    assert "one run across 2 servers: 2 ranks" in result.stdout
    report = json.loads(out.read_text())
    assert [job["state"] for job in report["jobs"]] == ["done", "done"]
    roles = [job["plan"]["cluster"] for job in report["jobs"]]
    assert [(r["rank_offset"], r["local_ranks"], r["world"]) for r in roles] == [
        (0, 1, 2),
        (1, 1, 2),
    ]
    results = report["results"]
    assert len(results) == 5  # the tiny set's five sizes, reported once, by rank 0's server
    for row in results:
        assert row["error"] is None and row["shape"].endswith("×2")
        assert row["gbps"] > 0 and row["busbw_gbps"] == pytest.approx(row["gbps"])  # n = 2


def test_tensorflow_all_reduce_across_two_agents(agent_factory, tmp_path):
    require("tensorflow")
    first, second = agent_factory(), agent_factory()
    out, port = tmp_path / "tf.json", rendezvous_port(2)
    command = dltui_command(
        "bench", "kernels", "--framework", "tensorflow", "--kind", "allreduce", "--set", "tiny",
        "--device", "cpu", "--max-seconds", "0.2", "--rendezvous", f"127.0.0.1:{port}",
        "--agent", first.address, "--agent", second.address, "--json", str(out),
        "--timeout", "200",  # a rank that hangs ends as a failed job, in the agent's words
    )  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=240)
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    assert [job["state"] for job in report["jobs"]] == ["done", "done"]
    assert all(row["server"].endswith(first.address) for row in report["results"])
    assert len(report["results"]) == 5  # the tiny set's five sizes, from worker 0 only
    for row in report["results"]:
        assert row["framework"] == "tensorflow" and row["error"] is None
        assert row["shape"].endswith("×2") and row["gbps"] > 0


def test_one_agent_failing_stops_the_run_on_both(agent_factory, tmp_path):
    first, second = agent_factory(), agent_factory()
    command = bench_across(
        (first, second), "--set", "full", "--gpus", "1", "--max-seconds", "1", "--timeout", "120"
    )
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           cwd=ROOT)  # fmt: skip
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(run.stdout), daemon=True).start()
    try:
        # Once a first size is measured the ranks have met: kill the second agent's part.
        wait_for(lambda: any(" allreduce " in line for line in lines), timeout=90,
                 what="a first all-reduce result")  # fmt: skip
        for worker in psutil.Process(second.process.pid).children(recursive=True):
            worker.kill()
        stderr = run.stderr.read()
        run.wait(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert_stopped_on_both(run.returncode, stderr, first, second)
