"""What a killed agent leaves: its worker and ranks go with it, and its job's folder goes when
the next agent starts, never while its agent runs. Real agents, in a temporary folder (TMPDIR)
of the test's own, so no other run's folders are looked at."""

from __future__ import annotations

import contextlib
import subprocess
import sys

import psutil
import pytest

from dltui.agent.job_folders import PREFIX, owner
from dltui.protocol.bench_plans import KernelPlan
from dltui.protocol.messages import Cancel, JobEnd, JobProgress, Run
from tests.agents import connect, until
from tests.conftest import require, wait_until

require("torch")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")

WORKER = "dltui.bench.worker"
RANK = "dltui.bench.kernels.allreduce_process"

ALLREDUCE = KernelPlan(framework="torch", kinds=["allreduce"], shape_set="full", device="cpu",
                       gpus=2, max_seconds=1.0)  # fmt: skip
GEMM = KernelPlan(framework="torch", shape_set="full", kinds=["gemm"], precisions=["fp32"],
                  device="cpu", iterations=50, max_seconds=1.0)  # fmt: skip
"""Enough work that the job still runs when the test acts on it."""


def running(pid: int, module: str) -> list[psutil.Process]:
    """The processes under `pid` that run `module`."""
    found = []
    for process in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):  # one that ended as it was listed
            if module in process.cmdline():
                found.append(process)
    return found


def ended(process: psutil.Process) -> bool:
    """Gone, or a zombie: its parent is dead and nothing has reaped it yet."""
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def test_a_killed_agents_worker_and_ranks_end_and_the_next_agent_removes_its_folder(
    agent_factory, tmp_path, monkeypatch
):
    """SIGKILL leaves the agent no time to remove its job's folder or stop its worker. The
    worker sees its stdin end and ends its process group; one rank is stopped (SIGSTOP) as a
    hung peer would be: its partner waits in the collective for it, and neither would read the
    end of its own stdin."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    first = agent_factory()
    client, _ = await connect(first.address)
    await client.stream.send(Run(1, "orphaned", ALLREDUCE))
    ranks = await wait_until(lambda: len(found := running(first.process.pid, RANK)) == 2 and found,
                             timeout=60, what="both ranks")  # fmt: skip
    (worker,) = running(first.process.pid, WORKER)
    left = [worker, *ranks]
    try:
        ranks[1].suspend()
        (folder,) = tmp_path.glob(f"{PREFIX}{first.process.pid}-*")
        first.process.kill()  # the agent alone, as the OOM killer picks one process
        first.process.wait()
        await wait_until(lambda: all(map(ended, left)), timeout=20, what="worker and ranks")
        assert [path.name.startswith("dltui-ranks-") for path in folder.iterdir()] == [True]
        second = agent_factory()  # clears what dead agents left before it listens
        assert not folder.exists()
        (removed,) = [line for line in second.log if "job folder(s)" in line]
        assert f"removed 1 job folder(s) in {tmp_path} left by agents no longer running" in removed
        assert f"(pid {first.process.pid})" in removed
    finally:
        for process in left:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        with contextlib.suppress(ConnectionError):
            await client.close()


async def test_agents_starting_beside_a_running_job_leave_its_folder_alone(
    agent_factory, tmp_path, monkeypatch
):
    """Two agents start at once beside one running a job: both look for dead agents' folders,
    one removes the dead one's, neither touches the live agent's; its job runs on."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    busy = agent_factory()
    client, _ = await connect(busy.address)
    await client.stream.send(Run(1, "long", GEMM))
    await until(client.stream, lambda m: isinstance(m, JobProgress), timeout=60)
    (live,) = tmp_path.glob(f"{PREFIX}{busy.process.pid}-*")
    process = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                               stdin=subprocess.PIPE)  # fmt: skip
    gone = owner(process.pid)
    process.communicate()
    assert gone is not None
    dead = tmp_path / f"{PREFIX}{gone.tag}-abcd1234"  # as an agent killed earlier left it
    dead.mkdir()
    starting = [agent_factory(wait=False) for _ in range(2)]

    def started() -> bool:
        return all(agent.port or agent.process.poll() is not None for agent in starting)

    await wait_until(started, timeout=30, what="both agents listening")
    assert all(agent.port for agent in starting), [agent.log for agent in starting]
    assert not dead.exists() and live.is_dir()
    said = [line for agent in starting for line in agent.log if "job folder(s)" in line]
    assert len(said) == 1 and f"(pid {gone.pid})" in said[0], said
    await until(client.stream, lambda m: isinstance(m, JobProgress), timeout=30)  # it runs on
    await client.stream.send(Cancel(2, "long"))
    end = await until(client.stream, lambda m: isinstance(m, JobEnd), timeout=30)
    assert end.state == "cancelled"
    await wait_until(lambda: not live.exists(), what="the job's folder, removed by its agent")
    await client.close()
