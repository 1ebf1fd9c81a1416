"""One training run across two real agents on loopback (scale-out), as `dltui bench models
--scale-out` runs it: baselines on the first server, then every server in one job — PyTorch DDP
over Gloo, TensorFlow's MultiWorkerMirroredStrategy. If one server's part dies, the run stops
on both and the error names that server."""

from __future__ import annotations

import json
import socket
import subprocess

import psutil
import pytest

from tests.agents import assert_stopped_on_both
from tests.conftest import ROOT, SLOW, dltui_command, rendezvous_port, require, wait_for

pytestmark = SLOW

SMALL = ("--model", "googlenet", "--device", "cpu", "--image-size", "32", "--batch", "2",
         "--warmup", "1", "--gpus", "1")  # fmt: skip


def train_across(agents, *args: str) -> list[str]:
    command = dltui_command("bench", "models", "--scale-out", *SMALL,
                            "--rendezvous", f"127.0.0.1:{rendezvous_port(2)}")  # fmt: skip
    for agent in agents:
        command += ["--agent", agent.address]
    return command + list(args)


@pytest.mark.parametrize("framework", ["torch", "tensorflow"])
def test_one_training_run_across_two_agents(agent_factory, tmp_path, framework):
    require(framework)
    first, second = agent_factory(), agent_factory()
    out = tmp_path / "across.json"
    command = train_across((first, second), "--framework", framework, "--steps", "4",
                           "--json", str(out))  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    steps = [(job["step"], job["target"], job["state"]) for job in report["jobs"]]
    assert steps == [
        (f"baseline on {first.address}", first.address, "done"),
        ("across 2 servers", first.address, "done"),
        ("across 2 servers", second.address, "done"),
    ]
    models = report["models"]
    assert [(m["gpus"], m["servers"], m["error"]) for m in models] == [
        (1, 1, None),  # one process of the first server: the one-GPU and one-server baseline
        (2, 2, None),  # both servers, reported once, by the server holding rank 0
    ]
    baseline, across = models
    assert across["server"].endswith(first.address) and across["framework"] == framework
    assert across["images_per_s"] == pytest.approx(2 * 2 * 4 / sum(across["step_times"]),
                                                   rel=1e-3)  # fmt: skip
    # Efficiency against one GPU and against one server (here the same run) is in the table.
    expected = across["images_per_s"] / (2 * baseline["images_per_s"])
    assert across["efficiency"]["vs_one_gpu"] == pytest.approx(expected)
    assert across["efficiency"]["vs_one_server"] == pytest.approx(expected)
    assert f"{expected * 100:.1f}%" in result.stdout
    # Said up front: the first server runs the baseline and its part, the second its part.
    said = result.stdout.replace(socket.gethostname(), "host")
    assert f"host@{first.address}: no GPU; {framework}, models googlenet: 2 training runs" in said
    assert f"host@{second.address}: no GPU; {framework}, models googlenet: 1 training run," in said
    assert f"# first, what its scaling is judged against: 1 GPU on host@{first.address}" in said


def test_killing_one_servers_part_stops_the_run_on_both(agent_factory):
    require("torch")
    first, second = agent_factory(), agent_factory()
    command = train_across((first, second), "--no-baseline", "--steps", "10000",
                           "--timeout", "120")  # fmt: skip
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           cwd=ROOT)  # fmt: skip
    try:
        # Once the second agent's rank is training, kill its worker and everything under it.
        def training() -> bool:
            ranks = psutil.Process(second.process.pid).children(recursive=True)
            return any("dltui.bench.training.rank" in " ".join(p.cmdline()) for p in ranks)

        wait_for(training, timeout=90, what="the second agent's rank")
        for process in psutil.Process(second.process.pid).children(recursive=True):
            process.kill()
        stderr = run.communicate(timeout=120)[1]
    finally:
        if run.poll() is None:
            run.kill()
    assert_stopped_on_both(run.returncode, stderr, first, second)


def test_a_sweep_is_refused_across_servers(agent_factory):
    command = dltui_command("bench", "models", "--scale-out", "--gpus", "1,2",
                            "--agent", "127.0.0.1:9", "--agent", "127.0.0.1:10")  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 2
    assert "one GPU count per server" in result.stderr
