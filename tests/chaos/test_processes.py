"""Faults with real processes: an agent killed mid-benchmark and restarted, a client frozen
with SIGSTOP while its benchmark runs. Each waits for conditions, never for fixed times, but
for the freeze itself, whose length is the point (DLTUI_SIGSTOP_S, default 10; the soak
figures use 30)."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import subprocess
import time

import psutil

from dltui.client.connection import AgentConnection
from dltui.client.target import parse_target
from dltui.fleet.state import Fleet
from dltui.protocol.bench_plans import KernelPlan
from dltui.protocol.messages import (
    ConnectionState,
    JobEnd,
    JobProgress,
    JobResult,
    Message,
    Pong,
    Sample,
    Subscribe,
)
from dltui.recording.format import RecordingError
from dltui.recording.reader import RecordingReader
from tests.agents import connect
from tests.conftest import ROOT, dltui_command, require, wait_for, wait_until

require("torch")

SIGSTOP_S = float(os.environ.get("DLTUI_SIGSTOP_S", "10"))


class Watcher:
    """A client connection into a Fleet, remembering when each frame arrived."""

    def __init__(self, address: str) -> None:
        self.fleet = Fleet()
        self.target = parse_target(address)
        self.server = self.fleet.add(self.target.label)
        self.frames: list[tuple[float, Message]] = []
        self.connection = AgentConnection(self.target, self.receive)

    def receive(self, source: str, message: Message) -> None:
        self.fleet.apply(source, message)
        self.frames.append((time.monotonic(), message))

    def first(self, kind: type, after: float = 0.0, state: str | None = None) -> float | None:
        return next(
            (t for t, m in self.frames if isinstance(m, kind) and t >= after
             and (state is None or m.state == state)),
            None,
        )  # fmt: skip


def recorded_links_and_samples(path) -> list[str]:
    """What the recording holds so far (read while it is written: a torn tail is left out),
    as link states and "Sample", repeats collapsed."""
    try:
        records = RecordingReader(path).read_all()
    except RecordingError:  # not created yet, or its header not yet whole
        return []
    kinds = [
        m.state if isinstance(m, ConnectionState) else type(m).__name__
        for m in (r.message for r in records)
        if isinstance(m, (ConnectionState, Sample))
    ]
    return [k for k, _ in itertools.groupby(kinds)]


def samples_after_a_gap(kinds: list[str]) -> bool:
    """Samples, the gap marked, then live again and samples from the restarted agent."""
    if "offline" not in kinds:
        return False
    gap = kinds.index("offline")
    after = kinds[gap:]
    return "Sample" in kinds[:gap] and "live" in after and "Sample" in after[after.index("live") :]


async def test_an_agent_killed_mid_benchmark_goes_offline_and_comes_back(agent_factory, tmp_path):
    agent = agent_factory()
    recording = tmp_path / "gap.dlrec"
    recorder = subprocess.Popen(dltui_command("record", "-o", str(recording), agent.address),
                                cwd=ROOT, stderr=subprocess.DEVNULL)  # fmt: skip
    watcher = Watcher(agent.address)
    task = asyncio.create_task(watcher.connection.run())
    try:
        await wait_until(lambda: watcher.connection.state == "live", what="live")
        plan = KernelPlan(shape_set="tiny", kinds=["gemm"], device="cpu", iterations=100_000,
                          max_seconds=30.0, timeout_s=300.0)  # fmt: skip
        job = await watcher.connection.run_plan(plan)
        await wait_until(lambda: watcher.first(JobProgress), 90, "the benchmark running")
        workers = psutil.Process(agent.process.pid).children(recursive=True)
        assert workers, "the benchmark runs in a worker process"
        # The recorder is a process of its own: it must have samples on disk before the kill.
        await wait_until(lambda: "Sample" in recorded_links_and_samples(recording), 30,
                         "the recorder's first samples")  # fmt: skip

        killed = time.monotonic()
        agent.process.kill()
        await wait_until(lambda: watcher.server.link == "offline", 5, "offline")
        assert watcher.first(ConnectionState, killed, "offline") - killed <= 2.0
        assert watcher.server.jobs[job].state == "failed"
        assert "lost the connection" in watcher.server.jobs[job].error
        # The orphaned worker notices its agent is gone and exits rather than hold a GPU.
        wait_for(lambda: not any(w.is_running() and w.status() != "zombie" for w in workers),
                 timeout=15, what="the orphaned worker to exit")  # fmt: skip

        agent_factory(listen=agent.address)  # the same port, a new process
        restarted = time.monotonic()
        await wait_until(lambda: watcher.first(Sample, restarted), 10, "samples again")
        assert watcher.first(ConnectionState, restarted, "live") - restarted <= 5.0
        # The recorder reconnects on its own schedule (backoff up to 2 s), not the watcher's.
        await wait_until(lambda: samples_after_a_gap(recorded_links_and_samples(recording)),
                         30, "the recorder's samples after the gap")  # fmt: skip
    finally:
        await watcher.connection.stop()
        task.cancel()
        recorder.send_signal(signal.SIGTERM)
    assert recorder.wait(timeout=30) == 0
    assert samples_after_a_gap(recorded_links_and_samples(recording))


async def collect(stream, seconds: float) -> list[tuple[float, Message]]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    frames = []
    while (left := deadline - loop.time()) > 0:
        try:
            frames.append((loop.time(), await asyncio.wait_for(stream.receive(), left)))
        except TimeoutError:
            break
    return frames


async def test_a_frozen_client_costs_the_agent_nothing_and_gets_its_results(agent_factory,
                                                                             tmp_path):  # fmt: skip
    agent = agent_factory()
    plan = tmp_path / "plan.toml"
    plan.write_text('[kernels]\nset = "tiny"\nkinds = ["gemm"]\ndevice = "cpu"\n'
                    "iterations = 100000\nmax_seconds = 1.5\n")  # fmt: skip
    recording = tmp_path / "frozen.dlrec"
    bystander, _ = await connect(agent.address)
    await bystander.stream.send(Subscribe(1, 10.0))
    recorder = subprocess.Popen(
        dltui_command("record", "-o", str(recording), "--plan", str(plan), agent.address),
        cwd=ROOT, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip

    async def until_progress() -> None:
        while not isinstance(await bystander.stream.receive(), JobProgress):
            pass

    await asyncio.wait_for(until_progress(), 90)
    agent_process = psutil.Process(agent.process.pid)
    rss_before = agent_process.memory_info().rss
    os.kill(recorder.pid, signal.SIGSTOP)
    try:
        frames = await collect(bystander.stream, SIGSTOP_S)
        rss_after = agent_process.memory_info().rss
    finally:
        os.kill(recorder.pid, signal.SIGCONT)
    resumed = time.monotonic()
    _, stderr = await asyncio.to_thread(recorder.communicate, timeout=120)
    finished_in = time.monotonic() - resumed
    samples = [m for _, m in frames if isinstance(m, Sample)]
    results = [m for _, m in frames if isinstance(m, JobResult)]
    ends = [m for _, m in frames if isinstance(m, JobEnd)]
    assert recorder.returncode == 0, stderr
    # The agent's memory is flat; sampling and the benchmark went on for the others.
    assert rss_after - rss_before < 8 << 20
    assert len(samples) >= SIGSTOP_S * 10 * 0.8
    assert [s.seq for s in samples] == list(range(samples[0].seq, samples[0].seq + len(samples)))
    assert results, "the benchmark went on during the freeze"
    # Everything the frozen client missed was delivered after it resumed: the same results
    # and the job's end are in its recording, on the one connection it never lost.
    records = RecordingReader(recording).read_all()
    dropped = max((r.message.dropped for r in records if isinstance(r.message, Pong)), default=0)
    print(
        f"\nSIGSTOP {SIGSTOP_S:g} s: agent RSS {rss_before / 1e6:.1f} → {rss_after / 1e6:.1f} MB;"
        f" during the freeze a bystander got {len(samples)} samples, {len(results)} results, "
        f"{len(ends)} job end; the recorder ended {finished_in:.1f} s after SIGCONT, "
        f"its samples dropped by the agent (counted): {dropped}"
    )
    recorded_results = [r.message.result for r in records if isinstance(r.message, JobResult)]
    assert all(result in recorded_results for result in (m.result for m in results))
    assert [r.message.state for r in records if isinstance(r.message, JobEnd)] == ["done"]
    assert not any(
        isinstance(r.message, ConnectionState) and r.message.state == "offline" for r in records
    )
    await bystander.close()
