"""`dltui record` against a real agent: a timed run, SIGTERM, and kill -9 of the recorder."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from dltui.commands.exit_status import REFUSED, UNREACHABLE
from dltui.protocol.messages import (
    ConnectionState,
    JobEnd,
    JobProgress,
    JobResult,
    Sample,
    Welcome,
)
from dltui.recording.format import RecordingError
from dltui.recording.reader import RecordingReader
from tests.conftest import ROOT, dltui_command, free_port, require, start_agent, wait_for
from tests.recordings import seconds_on_disk


def records_of(path):
    reader = RecordingReader(path)
    return reader, reader.read_all()


@pytest.fixture(scope="module")
def agent():
    """One agent for the module: recording it, or running a plan to its end, changes nothing."""
    agent = start_agent()
    yield agent
    agent.stop()


def test_a_timed_recording_holds_the_session(agent, tmp_path):
    path = tmp_path / "timed.dlrec"
    command = dltui_command("record", "-o", str(path), "--duration", "2", agent.address)
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 0, result.stderr
    reader, records = records_of(path)
    assert reader.damage == [] and reader.header.sources == {agent.address: agent.address}
    kinds = [type(record.message) for record in records]
    assert Welcome in kinds and ConnectionState in kinds
    samples = [r for r in records if isinstance(r.message, Sample)]
    assert 12 <= len(samples) <= 25  # 2 s at 10 Hz, less the connection's start
    assert all(r.source == agent.address for r in records)
    assert f"{len(records)} frames" in result.stderr
    refused = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert refused.returncode == 2 and "say --overwrite" in refused.stderr


def test_sigterm_closes_the_file_cleanly(agent, tmp_path):
    path = tmp_path / "stopped.dlrec"
    recorder = subprocess.Popen(
        dltui_command("record", "-o", str(path), agent.address), cwd=ROOT,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    wait_for(lambda: seconds_on_disk(path) >= 0, timeout=30, what="samples on disk")
    recorder.send_signal(signal.SIGTERM)
    assert recorder.wait(timeout=30) == 0
    reader, records = records_of(path)
    assert reader.damage == [] and any(isinstance(r.message, Sample) for r in records)


def test_kill_9_loses_at_most_the_last_second(agent, tmp_path):
    path = tmp_path / "killed.dlrec"
    recorder = subprocess.Popen(dltui_command("record", "-o", str(path), agent.address), cwd=ROOT)
    # Flushed more than once already: the kill lands at any point of the flush cycle.
    wait_for(lambda: seconds_on_disk(path) >= 1.5, timeout=30, what="two flushes of samples")
    killed_at = time.time()
    recorder.kill()
    recorder.wait(timeout=10)
    reader, records = records_of(path)
    samples = [r for r in records if isinstance(r.message, Sample)]
    assert samples and killed_at - samples[-1].received <= 1.0
    assert all(d.reason == "file ends inside a record" for d in reader.damage)


def test_a_plan_runs_while_recording_and_ends_it(agent, tmp_path):
    require("torch")
    plan = tmp_path / "nightly.toml"
    plan.write_text(
        '[kernels]\nset = "tiny"\nkinds = ["gemm"]\ndevice = "cpu"\niterations = 3\n'
        "max_seconds = 0.2\n"
    )
    path = tmp_path / "nightly.dlrec"
    command = dltui_command("record", "-o", str(path), "--plan", str(plan), agent.address)
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    _, records = records_of(path)
    ends = [r.message for r in records if isinstance(r.message, JobEnd)]
    results = [r.message.result for r in records if isinstance(r.message, JobResult)]
    assert [end.state for end in ends] == ["done"]
    assert results and all(r.kind == "gemm" and r.tflops > 0 for r in results)
    # The recording goes on for a while after the plan ends, so the servers are seen settling.
    (ended,) = [r.received for r in records if isinstance(r.message, JobEnd)]
    settling = [r for r in records if isinstance(r.message, Sample) and r.received > ended]
    assert settling and settling[-1].received - ended > 1.5


def test_ctrl_c_cancels_the_plans_jobs_on_the_agent(agent, tmp_path):
    """Stopped mid-plan, the recorder once exited 130 ("jobs cancelled") while the agent ran
    the plan on, and refused the next client as busy until it ended."""
    require("torch")
    plan = tmp_path / "long.toml"
    plan.write_text(
        '[kernels]\nset = "tiny"\nkinds = ["gemm"]\ndevice = "cpu"\niterations = 100000\n'
        "max_seconds = 60\n"
    )
    path = tmp_path / "stopped.dlrec"
    recorder = subprocess.Popen(
        dltui_command("record", "-o", str(path), "--plan", str(plan), agent.address),
        cwd=ROOT, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip

    def running() -> bool:
        try:
            records = RecordingReader(path).read_all()
        except RecordingError:  # created, its header not written yet
            return False
        return any(isinstance(r.message, JobProgress) for r in records)

    wait_for(lambda: path.exists() and running(), timeout=60, what="the plan's job running")
    recorder.send_signal(signal.SIGINT)
    _, stderr = recorder.communicate(timeout=30)
    assert recorder.returncode == 130 and "Traceback" not in stderr, stderr
    _, records = records_of(path)
    assert [r.message.state for r in records if isinstance(r.message, JobEnd)] == ["cancelled"]


def test_a_plan_on_an_agent_that_cannot_be_reached_fails_at_once(tmp_path):
    """The client session's one policy: the first failed attempt is the answer."""
    plan = tmp_path / "nightly.toml"
    plan.write_text('[kernels]\nset = "tiny"\nkinds = ["gemm"]\ndevice = "cpu"\n')
    address = f"127.0.0.1:{free_port()}"
    path = tmp_path / "nobody.dlrec"
    command = dltui_command("record", "-o", str(path), "--plan", str(plan), address)
    began = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert time.monotonic() - began < 30
    assert (
        result.returncode == UNREACHABLE
        and f"cannot reach {address}: connection refused" in result.stderr
    )
    _, records = records_of(path)  # what was seen is kept: the attempt and its failure
    assert [r.message.state for r in records if isinstance(r.message, ConnectionState)][
        -1
    ] == "offline"


def test_a_bad_plan_file_is_a_clear_error(tmp_path):
    plan = tmp_path / "bad.toml"
    plan.write_text('[kernels]\nkinds = ["gemm", "fft"]\nshell = "rm -rf /"\n')
    command = dltui_command("record", "-o", str(tmp_path / "x.dlrec"), "--plan", str(plan))
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 2 and "unknown keys shell" in result.stderr
    assert not (tmp_path / "x.dlrec").exists()


def test_an_agent_never_reached_in_the_whole_recording_is_no_success(agent, tmp_path):
    """Without a plan the recorder keeps trying; at the end, an agent it never reached (here
    one that refuses the secret) is said, with its exit status, and the file keeps the tries."""
    secret = tmp_path / "secret"
    secret.write_text("not the agent's secret at all\n")
    secret.chmod(0o600)
    path = tmp_path / "refused.dlrec"
    command = dltui_command("record", "-o", str(path), "--duration", "1", "--secret-file",
                            str(secret), agent.address)  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == REFUSED, result.stderr
    assert f"{agent.address} refused the connection" in result.stderr
    _, records = records_of(path)
    assert "auth_failed" in [
        r.message.state for r in records if isinstance(r.message, ConnectionState)
    ]


def test_overwrite_keeps_the_old_recording_until_an_agent_answers(agent, tmp_path):
    """It removed the old file first: a night the agent was down cost the last good one."""
    path = tmp_path / "nightly.dlrec"
    old = (ROOT / "tests" / "fixtures" / "cpu-kernels.dlrec").read_bytes()
    path.write_bytes(old)
    nobody = f"127.0.0.1:{free_port()}"
    command = dltui_command("record", "-o", str(path), "--overwrite", "--duration", "1")
    missed = subprocess.run([*command, nobody], capture_output=True, text=True, cwd=ROOT,
                            timeout=60)  # fmt: skip
    assert missed.returncode == UNREACHABLE and "kept as it was" in missed.stderr
    assert path.read_bytes() == old and [p.name for p in tmp_path.iterdir()] == [path.name]
    done = subprocess.run([*command, agent.address], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    reader, records = records_of(path)
    assert reader.header.sources == {agent.address: agent.address} and records
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_a_recording_stopped_while_it_connects_takes_no_samples(agent, tmp_path):
    """Stopped as it connected, the cancel was lost to asyncio.wait_for's race: the connection
    subscribed anyway and recorded for the session's 5 s close timeout."""
    path = tmp_path / "instant.dlrec"
    command = dltui_command("record", "-o", str(path), "--duration", "1e-6", agent.address)
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 0, result.stderr
    _, records = records_of(path)
    assert not [r for r in records if isinstance(r.message, Sample)]


def test_a_plan_that_cannot_run_across_these_agents_is_refused_before_a_file(tmp_path):
    """bench refused it up front; record connected, recorded, then said so, and left a file
    that made the next try say 'exists'."""
    plan = tmp_path / "mixed.toml"
    plan.write_text('[kernels]\nset = "tiny"\nkinds = ["gemm", "allreduce"]\ndevice = "cpu"\n')
    path = tmp_path / "mixed.dlrec"
    nobody = [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]
    command = dltui_command("record", "-o", str(path), "--plan", str(plan), *nobody)
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 2 and "only the collectives run across servers" in result.stderr
    assert not path.exists()


def test_a_duration_that_ends_a_plan_early_says_so(agent, tmp_path):
    require("torch")
    plan = tmp_path / "long.toml"
    plan.write_text('[kernels]\nset = "tiny"\nkinds = ["gemm"]\ndevice = "cpu"\n'
                    "iterations = 100000\nmax_seconds = 60\n")  # fmt: skip
    path = tmp_path / "short.dlrec"
    command = dltui_command("record", "-o", str(path), "--plan", str(plan), "--duration", "2",
                            agent.address)  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 130, result.stderr
    assert "--duration 2 s ended the recording before its plans" in result.stderr
    _, records = records_of(path)
    assert [r.message.state for r in records if isinstance(r.message, JobEnd)] == ["cancelled"]
