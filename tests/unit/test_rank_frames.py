"""A rank speaks frames, as the worker does: its report pipe carries the worker's own messages,
which the one frame loop (protocol/stream.py) reads; the worker's side of it (bench/ranks.py
`supervise`) names the rank in whatever went wrong: a bad frame, a frame a rank never sends,
a death with its last words. The ranks here are small Python processes, not a framework's."""

from __future__ import annotations

import io
import os
import sys
import time

import psutil
import pytest

from dltui.bench.ranks import Reporter, rank_name, supervise
from dltui.protocol.bench_results import KernelResult
from dltui.protocol.framing import FrameDecoder
from dltui.protocol.messages import JobEnd, JobProgress, JobResult
from dltui.protocol.stream import read_message

RESULT = KernelResult("allreduce", "torch", "cpu", "fp32", "allreduce", "1000 floats ×2")


def test_a_ranks_report_pipe_carries_frames_the_stream_loop_reads() -> None:
    reader, writer = os.pipe()
    report = Reporter(os.fdopen(writer, "wb"), 1)
    report.progress(0.25)
    report.progress(0.5)  # within PROGRESS_INTERVAL_S of the first: not sent
    report.result(RESULT)
    report.error("RuntimeError: boom")
    report.done()
    os.close(writer)
    source = io.BufferedReader(io.FileIO(reader))
    decoder = FrameDecoder()
    assert read_message(source, decoder) == JobProgress("rank 1", 0, 0, "", 0.25)
    assert read_message(source, decoder) == JobResult("rank 1", result=RESULT)
    failed = read_message(source, decoder)
    assert isinstance(failed, JobEnd) and failed.job == "rank 1"
    assert (failed.state, failed.error) == ("failed", "RuntimeError: boom")
    done = read_message(source, decoder)
    assert isinstance(done, JobEnd) and (done.state, done.error) == ("done", None)
    with pytest.raises(EOFError):
        read_message(source, decoder)


REPORTS = """
from dltui.bench.ranks import Reporter
from dltui.protocol.bench_results import KernelResult
report = Reporter.on_stdout(0)
print("a stray print goes to stderr, not into the frames")
report.progress(0.5)
report.result(KernelResult("allreduce", "torch", "cpu", "fp32", "allreduce", "first"))
report.result(KernelResult("allreduce", "torch", "cpu", "fp32", "allreduce", "second"))
report.done()
"""


def descendants() -> set[int]:
    return {child.pid for child in psutil.Process().children(recursive=True)}


def run(*ranks: str, silence_s: float = 30.0) -> tuple[list[KernelResult], list[tuple], str | None]:
    """Each script a rank (`--rank N`, its place); the results, the progress and the failure."""
    before = descendants()
    results: list[KernelResult] = []
    progress: list[tuple] = []
    commands = [[sys.executable, "-c", rank, "--rank", str(n)] for n, rank in enumerate(ranks)]
    measured, failure = supervise(
        commands, ["first", "second"], silence_s, True, results.append,
        lambda *step: progress.append(step), lambda: False, KernelResult,
    )  # fmt: skip
    assert measured == len(results)
    assert descendants() - before == set()  # no rank outlives the run
    return results, progress, failure


def test_the_worker_reads_a_ranks_frames_and_its_stray_prints_stay_out_of_them() -> None:
    results, progress, failure = run(REPORTS)
    assert failure is None
    assert [r.shape for r in results] == ["first", "second"]
    assert progress == [(0, 2, "first"), (0, 2, "first", 0.5), (1, 2, "second")]


WAITS = "import sys; sys.stdin.read()"  # a rank that runs until the worker stops it
MALFORMED = "import os; os.write(1, b'\\0\\0\\0\\1\\xc1')"  # 0xc1: never used in msgpack
PING = """
import os
from dltui.protocol.framing import encode_frame
from dltui.protocol.messages import Ping
from dltui.protocol.wire import to_wire
os.write(1, encode_frame(to_wire(Ping(1, 2))))
"""
KILLED = """
import os, signal, sys
print("first words", file=sys.stderr)
print("last words", file=sys.stderr, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_malformed_frame_is_an_error_that_names_its_rank() -> None:
    started = time.monotonic()
    results, _, failure = run(WAITS, MALFORMED)
    assert results == []
    assert failure is not None
    assert failure.startswith("rank 1: a bad frame on its report pipe: undecodable frame")
    assert time.monotonic() - started < 10  # rank 0 was terminated, not waited for


def test_a_frame_a_rank_never_sends_is_an_error_that_names_its_rank() -> None:
    _, _, failure = run(PING, WAITS)
    assert (
        failure
        == "rank 0: a bad frame on its report pipe: a 'ping' frame, which a rank does not send"
    )


def test_a_rank_that_dies_is_named_with_its_signal_and_last_words(capfd) -> None:
    _, _, failure = run(WAITS, KILLED)
    assert failure == "rank 1 was killed by SIGKILL (out of host memory?): last words"
    assert "first words\nlast words" in capfd.readouterr().err  # passed on to the worker's


def test_silence_ends_the_run() -> None:
    _, _, failure = run(WAITS, silence_s=1.0)
    assert failure == "no report from any rank for 1 s"


def test_a_rank_is_named_by_its_global_rank_or_its_place() -> None:
    assert rank_name(["python", "-m", "x", "--rank", "5", "--world", "8"], 1) == "rank 5"
    assert rank_name(["python", "-m", "x", "--tf-task", "2"], 0) == "rank 2"
    assert rank_name(["python", "-m", "x"], 3) == "rank 3"
