"""Benchmark jobs through a real agent process: run, refuse, cancel, crash, time out.

The worker runs PyTorch on the CPU with tiny shapes, so these tests need torch installed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import replace

import psutil
import pytest

from dltui.agent.jobs import interface_towards
from dltui.protocol.bench_plans import ClusterRole, KernelPlan, ModelPlan
from dltui.protocol.messages import (
    MAX_BATCH_S,
    Cancel,
    JobEnd,
    JobProgress,
    JobResult,
    Run,
    Sample,
    Subscribe,
)
from tests.agents import TINY, connect, until
from tests.conftest import ROOT, dltui_command, require, start_agent, wait_until

require("torch")

# Enough work that a job is still running when the test acts on it.
LONG = KernelPlan(
    framework="torch",
    shape_set="full",
    kinds=["gemm"],
    precisions=["fp32"],
    device="cpu",
    iterations=50,
    max_seconds=1.0,
)


@pytest.fixture(scope="module")
def agent():
    """One agent for the module: each test's jobs end before the next test starts."""
    agent = start_agent()
    yield agent
    agent.stop()


def workers(agent) -> list[psutil.Process]:
    return psutil.Process(agent.process.pid).children(recursive=True)


async def test_a_tiny_plan_runs_while_sampling_goes_on(agent):
    client, _ = await connect(agent.address)
    await client.stream.send(Subscribe(1, 10.0))
    await client.stream.send(Run(2, "job1", TINY))
    seen: list = []
    end = await until(client.stream, lambda m: isinstance(m, JobEnd), collect=seen)
    assert end.job == "job1" and end.state == "done" and end.error is None
    results = [m.result for m in seen if isinstance(m, JobResult)]
    progress = [m for m in seen if isinstance(m, JobProgress)]
    assert results and progress and progress[-1].total == len(results)
    for result in results:
        assert result.error is None and result.kind == "gemm" and result.device == "cpu"
        assert 0 < result.median_s < 10 and result.iterations >= 3
        assert 1e-6 < result.tflops < 10
    assert sum(isinstance(m, Sample) for m in seen) >= 2  # the agent kept sampling
    assert workers(agent) == []
    await client.close()


async def test_each_result_says_how_long_its_worker_took_over_the_case(agent):
    """A short case's progress and result can reach a client together (the TUI dated both by
    one sample: 0 s): the worker times the case, from its start to its result."""
    client, _ = await connect(agent.address)
    asked = time.monotonic()
    await client.stream.send(Run(1, "timed", TINY))
    seen: list = []
    await until(client.stream, lambda m: isinstance(m, JobEnd), collect=seen)
    took = time.monotonic() - asked
    results = [m.result for m in seen if isinstance(m, JobResult)]
    assert results
    for result in results:
        assert result.case_s is not None
        assert result.case_s >= result.min_s * result.iterations  # its timed runs, at least
    assert sum(result.case_s for result in results) <= took
    await client.close()


async def test_samples_read_before_a_job_frame_arrive_before_it(agent):
    """A client that lets samples wait the longest still gets them in the order things
    happened: a job's frames take the samples gathered so far with them."""
    client, _ = await connect(agent.address)
    await client.stream.send(Subscribe(1, 10.0, MAX_BATCH_S))
    for seq, job in ((2, "first"), (3, "second")):  # two ends: each lands anywhere in a batch
        await client.stream.send(Run(seq, job, TINY))
        end = await until(client.stream, lambda m: isinstance(m, JobEnd))
        assert end.state == "done"
        later = await until(client.stream, lambda m: isinstance(m, Sample), 2 * MAX_BATCH_S)
        # Nothing read well before the end comes after it (an agent hands a sample over
        # within a few ms of reading it: 0.3 s is slack for a loaded machine).
        assert later.wall > end.wall - 0.3, (job, end.wall - later.wall)
    await client.close()


async def test_a_bad_plan_is_refused_before_anything_runs(agent):
    client, _ = await connect(agent.address)
    bad = KernelPlan(framework="caffe", kinds=["gemm", "fft"], precisions=["fp8"], gpus=-1)
    await client.stream.send(Run(1, "bad", bad))
    end = await until(client.stream, lambda m: isinstance(m, JobEnd))
    assert end.state == "refused"
    for word in ("caffe", "fft", "fp8", "gpus"):
        assert word in end.error
    assert workers(agent) == []
    # The connection stays usable: a good plan runs next.
    await client.stream.send(Run(2, "good", TINY))
    end = await until(client.stream, lambda m: isinstance(m, JobEnd))
    assert (end.job, end.state) == ("good", "done")
    await client.close()


async def test_cancel_and_a_second_job_while_busy(agent):
    client, _ = await connect(agent.address)
    await client.stream.send(Run(1, "long", LONG))
    await until(client.stream, lambda m: isinstance(m, JobProgress))
    await client.stream.send(Run(2, "other", TINY))
    busy = await until(client.stream, lambda m: isinstance(m, JobEnd))
    assert (busy.job, busy.state) == ("other", "refused") and "busy" in busy.error
    await client.stream.send(Cancel(3, "long"))
    end = await until(client.stream, lambda m: isinstance(m, JobEnd), timeout=20)
    assert (end.job, end.state) == ("long", "cancelled")
    assert workers(agent) == []
    await client.close()


async def test_a_cancel_that_comes_while_the_worker_starts_still_stops_it(agent):
    """A cancel read before the worker's process existed marked the job cancelled and stopped
    nothing: the job ran on to its end (on a loaded machine, Ctrl-C in `dltui bench` hung)."""
    client, _ = await connect(agent.address)
    await client.stream.send(Run(1, "early", LONG))
    await client.stream.send(Cancel(2, "early"))  # read at once, as the worker is spawned
    end = await until(client.stream, lambda m: isinstance(m, JobEnd), timeout=20)
    assert (end.job, end.state) == ("early", "cancelled")
    await wait_until(lambda: workers(agent) == [], timeout=10)
    await client.close()


async def test_a_killed_worker_fails_the_job_and_the_agent_goes_on(agent):
    client, _ = await connect(agent.address)
    await client.stream.send(Run(1, "doomed", LONG))
    await until(client.stream, lambda m: isinstance(m, JobProgress))
    for worker in workers(agent):
        worker.kill()
    end = await until(client.stream, lambda m: isinstance(m, JobEnd), timeout=20)
    assert end.state == "failed" and "SIGKILL" in end.error
    assert agent.process.poll() is None
    await client.stream.send(Subscribe(2, 10.0))
    await until(client.stream, lambda m: isinstance(m, Sample), timeout=5)
    await client.close()


async def test_a_killed_run_leaves_no_folder_behind(agent_factory, tmp_path, monkeypatch):
    """A run's ranks meet in a folder of the run's own, which a worker killed mid-run cannot
    remove: the agent gives each job a folder for its runs' and removes it once the worker's
    whole process group is gone."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    agent = agent_factory()
    client, _ = await connect(agent.address)
    plan = KernelPlan(framework="torch", kinds=["allreduce"], shape_set="full", device="cpu",
                      gpus=2, max_seconds=1.0)  # fmt: skip
    await client.stream.send(Run(1, "doomed", plan))

    def running(module: str) -> list[psutil.Process]:
        found = []
        for process in workers(agent):
            with contextlib.suppress(psutil.NoSuchProcess):  # one that ended as it was listed
                if module in process.cmdline():
                    found.append(process)
        return found

    await wait_until(lambda: len(running("dltui.bench.kernels.allreduce_process")) == 2,
                     timeout=60, what="both ranks")  # fmt: skip
    assert len(list(tmp_path.glob("dltui-job-*/dltui-ranks-*"))) == 1  # the run's, in the job's
    (worker,) = running("dltui.bench.worker")
    worker.kill()
    end = await until(client.stream, lambda m: isinstance(m, JobEnd), timeout=20)
    assert end.state == "failed" and "SIGKILL" in end.error
    assert workers(agent) == []
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith("dltui-")] == []
    await client.close()


async def test_a_job_whose_folder_cannot_be_made_fails_and_the_next_one_runs(
    agent_factory, tmp_path, monkeypatch
):
    """The temporary folder removed under a running agent (or a full disk): the job fails
    saying so, and the agent is free for the next one."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))
    agent = agent_factory()
    client, _ = await connect(agent.address)

    async def job(seq: int) -> JobEnd:
        await client.stream.send(Run(seq, f"job{seq}", TINY))
        return await until(client.stream, lambda m: isinstance(m, JobEnd) and m.job == f"job{seq}")

    assert (await job(1)).state == "done"
    shutil.rmtree(temporary)
    end = await job(2)
    assert end.state == "failed" and "cannot make the job's folder" in end.error, end
    temporary.mkdir()
    assert (await job(3)).state == "done"
    await client.close()


async def test_a_rendezvous_host_no_resolver_can_take_is_refused_and_the_next_job_runs(agent):
    """A name with an empty part ("gpu01..lab") or one over 63 characters fails in the
    resolver's own encoding. It once passed the agent's check, failed there, and left the agent
    busy for good with no `job_end`."""
    client, _ = await connect(agent.address)
    role = ClusterRole("gpu01..lab", 29500, 0, 1, 2)
    plan = ModelPlan(models=["resnet20"], device="cpu", cluster=role)
    await client.stream.send(Run.of(1, "across", plan))
    end = await until(client.stream, lambda m: isinstance(m, JobEnd) and m.job == "across")
    assert end.state == "refused" and "is not a host name or address" in end.error, end
    await client.stream.send(Run(2, "next", TINY))
    end = await until(client.stream, lambda m: isinstance(m, JobEnd) and m.job == "next")
    assert end.state == "done", end
    await client.close()


@pytest.mark.parametrize("host", ["gpu01..lab", "x" * 64 + ".lab"])
def test_the_interface_towards_a_name_no_resolver_can_take_is_none(host):
    assert interface_towards(host) is None
    assert interface_towards("127.0.0.1") == "lo"


async def test_a_job_past_its_timeout_fails(agent):
    client, _ = await connect(agent.address)
    await client.stream.send(Run(1, "slow", replace(LONG, timeout_s=1.0)))
    end = await until(client.stream, lambda m: isinstance(m, JobEnd), timeout=30)
    assert end.state == "failed" and "timed out after 1 s" in end.error
    assert workers(agent) == []
    await client.close()


def test_bench_kernels_command_prints_a_table_and_writes_json(tmp_path):
    out = tmp_path / "results.json"
    command = dltui_command(
        "bench", "kernels", "--set", "tiny", "--kind", "gemm", "--device", "cpu",
        "--iterations", "3", "--max-seconds", "0.2", "--json", str(out),
    )  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].split()[:3] == ["kind", "shape", "pass"]
    rows = [line for line in lines[2:] if line.startswith("gemm")]
    report = json.loads(out.read_text())
    assert [job["state"] for job in report["jobs"]] == ["done"]
    assert len(report["results"]) == len(rows) > 0
    assert all(r["tflops"] > 0 for r in report["results"])


async def test_the_agent_keeps_to_one_cpu_and_its_worker_runs_on_all(agent):
    """The agent's threads share the last CPU it may use (their wakes stay on one CPU); the
    benchmark worker it starts runs on every CPU the agent could."""
    allowed = os.sched_getaffinity(0)
    assert any(f"on CPU {max(allowed)}" in line for line in agent.log)
    threads = psutil.Process(agent.process.pid).threads()
    assert len(threads) >= 2  # the event loop and the sampling thread, at least
    assert all(os.sched_getaffinity(thread.id) == {max(allowed)} for thread in threads)
    client, _ = await connect(agent.address)
    await client.stream.send(Run(1, "long", LONG))
    await until(client.stream, lambda m: isinstance(m, JobProgress))
    assert [set(worker.cpu_affinity()) for worker in workers(agent)] == [allowed]
    await client.stream.send(Cancel(2, "long"))
    await until(client.stream, lambda m: isinstance(m, JobEnd), timeout=20)
    await client.close()


def test_the_agent_runs_on_the_cpu_asked_or_says_why_not():
    allowed = sorted(os.sched_getaffinity(0))
    anywhere = start_agent("--cpu", "any")
    try:
        threads = psutil.Process(anywhere.process.pid).threads()
        assert all(os.sched_getaffinity(thread.id) == set(allowed) for thread in threads)
        assert not any("on CPU" in line for line in anywhere.log)
    finally:
        anywhere.stop()
    beyond = max(allowed) + 1
    for cpu, words in (
        (str(beyond), f"--cpu: CPU {beyond} is not one this process may run on: CPU"),
        ("last", 'expected a CPU number or "any"'),
    ):
        refused = subprocess.run(dltui_command("agent", "--listen", "127.0.0.1:0", "--cpu", cpu),
                                 capture_output=True, text=True, cwd=ROOT, timeout=60)  # fmt: skip
        assert refused.returncode == 2 and words in refused.stderr, refused.stderr
