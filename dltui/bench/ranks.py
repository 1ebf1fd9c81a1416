"""Rank processes: start them, watch them, stop them, and say why a run failed.

Used wherever a framework's collective engine needs one process per GPU: all-reduce, and
data-parallel training. Ranks report JSON lines on one shared pipe (`Reporter` writes them);
the first failure ends the run at once, because the survivors of a dead peer can block in a
collective until their timeout.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from dltui.bench.backends import error_text
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.protocol.validate import build
from dltui.protocol.wire import to_plain

Result = KernelResult | ModelResult
OnResult = Callable[[Result], None]
R = TypeVar("R", bound=Result)
OnProgress = Callable[..., None]
"""on_progress(done, total, label[, fraction]): as the worker's JobProgress frames."""
ShouldStop = Callable[[], bool]

EXIT_GRACE_S = 10.0
PROGRESS_INTERVAL_S = 0.5


class Reporter:
    """A rank's side of the report pipe: one JSON line per event, each a single write."""

    def __init__(self, fd: int, rank: int) -> None:
        self._channel = os.fdopen(fd, "w", buffering=1)  # closes when the process ends
        self.rank = rank
        self._last_progress = 0.0

    def _send(self, event: str, **fields: object) -> None:
        self._channel.write(json.dumps({"event": event, "rank": self.rank, **fields}) + "\n")

    def result(self, result: Result) -> None:
        self._send("result", result=to_plain(result))

    def error(self, message: str) -> None:
        self._send("error", message=message)

    def progress(self, fraction: float) -> None:
        """How far this rank's case is; sent at most every PROGRESS_INTERVAL_S."""
        now = time.monotonic()
        if now - self._last_progress >= PROGRESS_INTERVAL_S:
            self._last_progress = now
            self._send("progress", fraction=round(min(max(fraction, 0.0), 1.0), 4))


def run_rank(report: Reporter, work: Callable[[], None]) -> int:
    """A rank process's exit status: 0 after `work`; 1 after any framework error, which goes to
    the report pipe (and its traceback to stderr)."""
    # A rank draws nothing, but Keras imports matplotlib and its pyplot as it starts wherever
    # matplotlib is installed: ~0.4 s of CPU in each TensorFlow rank. None here makes those
    # imports fail, as Keras expects on a machine without matplotlib.
    sys.modules.setdefault("matplotlib", None)  # type: ignore[arg-type]
    try:
        work()
    except Exception as error:  # any framework error: report it, and fail this rank
        traceback.print_exc()
        report.error(error_text(error))
        return 1
    return 0


@contextmanager
def local_rendezvous() -> Iterator[str]:
    """Where the ranks of a run on this server meet: a file in a folder of its own, not a port.
    A port free when chosen can be taken before rank 0 binds it (seen under parallel tests);
    torch.distributed's file store needs no port, and the folder goes when the run does."""
    with tempfile.TemporaryDirectory(prefix="dltui-ranks-") as folder:
        yield Path(folder, "store").as_uri()


def data_parallel(model: Any, device: Any, world: int, compile_mode: str | None) -> Any:
    """The model as the step runs it: DDP where there are several ranks, then compiled where
    asked (`compile_mode` None: eager)."""
    net = model
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel

        ids = [device.index] if device.type == "cuda" else None
        net = DistributedDataParallel(model, device_ids=ids, gradient_as_bucket_view=True)
    if compile_mode is not None:
        import torch

        net = torch.compile(net, mode=compile_mode)
    return net


def across_ranks(values: list[float], device: Any, world: int, largest: bool) -> list[float]:
    """Each value summed over the ranks, or its largest (a step is as slow as its slowest
    rank); the values themselves where there is one rank."""
    if world == 1:
        return values
    import torch
    import torch.distributed as dist

    tensor = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX if largest else dist.ReduceOp.SUM)
    return list(tensor.tolist())


def join_process_group(device: Any, master: str, rank: int, world: int, timeout_s: float) -> None:
    """torch.distributed's group for this rank: NCCL on a GPU (bound to `device`, so it connects
    at once), Gloo on CPUs; a rank whose peer vanished fails after `timeout_s`, never hangs.
    `master` is rank 0's HOST:PORT across servers, a file:// rendezvous on one."""
    import torch.distributed as dist

    on_gpu = device.type == "cuda"
    dist.init_process_group(
        "nccl" if on_gpu else "gloo",
        init_method=master if "://" in master else f"tcp://{master}",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=timeout_s),
        device_id=device if on_gpu else None,
    )


def supervise(
    commands: list[list[str]],
    labels: list[str],
    silence_s: float,
    reports: bool,
    on_result: Callable[[R], None],
    on_progress: OnProgress,
    should_stop: ShouldStop,
    result_type: type[R],
    env: dict[str, str] | None = None,
) -> tuple[int, str | None]:
    """Run the ranks to the end; return how many cases were measured and why the run failed.
    Each result announces the next case: `on_progress(done, len(labels), label)`; a rank's
    progress events say how far the current one is. Without `reports` (no global rank 0 here)
    no result is expected, so none missing is a failure. `env` is added to the ranks'
    environment (their placement on GPUs).

    All ranks share one report pipe (a line is one write of less than PIPE_BUF, so lines never
    interleave). The first failure ends the run at once: the other ranks are terminated, not
    waited for, because the survivors of a dead peer may block in a collective until timeout.
    """
    reader, writer = os.pipe()
    processes: list[subprocess.Popen[bytes]] = []
    errors: dict[int, str] = {}
    deaths: dict[int, int] = {}
    """Ranks that exited with an error code on their own (not from our signal)."""
    notes: list[str] = []
    measured = 0
    pending = b""
    stopping = finished = False

    def note_deaths() -> None:
        for rank, process in enumerate(processes):
            if code := process.poll():
                deaths.setdefault(rank, code)

    def handle(chunk: bytes) -> None:
        nonlocal measured, pending
        *lines, pending = (pending + chunk).split(b"\n")
        for event in map(json.loads, lines):
            if event["event"] == "result":
                on_result(build(result_type, event["result"], "result"))
                measured += 1
                if measured < len(labels) and not stopping:
                    on_progress(measured, len(labels), labels[measured])
            elif event["event"] == "progress":
                if measured < len(labels) and not stopping:
                    on_progress(measured, len(labels), labels[measured], event["fraction"])
            else:
                errors.setdefault(event["rank"], event["message"])

    on_progress(0, len(labels), labels[0])
    try:
        environment = {**os.environ, **env} if env else None
        try:  # stdout=2: a stray print must never reach a worker's frame stream
            for command in commands:
                args = [*command, "--report-fd", str(writer)]
                processes.append(
                    subprocess.Popen(
                        args, stdin=subprocess.PIPE, stdout=2, pass_fds=(writer,), env=environment
                    )
                )
        finally:
            os.close(writer)  # from now on, end of file means every rank has ended
        last_news = time.monotonic()
        while not (errors or deaths or notes):
            if not stopping and should_stop():
                stopping = True
                for process in processes:
                    _ask_to_stop(process)
            chunk = os.read(reader, 65536) if select.select([reader], [], [], 0.1)[0] else None
            note_deaths()
            if chunk == b"":
                break
            if chunk:
                last_news = time.monotonic()
                handle(chunk)
            if time.monotonic() - last_news > silence_s:
                notes.append(f"no report from any rank for {silence_s:.0f} s")
        finished = not (errors or deaths or notes)
    finally:
        for rank, process in enumerate(processes):
            if code := _end(process, kill=not finished):
                deaths.setdefault(rank, code)
        while chunk := os.read(reader, 65536):  # what the ranks wrote before they ended
            handle(chunk)
        os.close(reader)
    if reports and not (errors or deaths or stopping) and measured < len(labels):
        notes.append(f"the ranks ended after {measured} of {len(labels)} sizes, with no error")
    # A rank that died without a word usually caused the others' errors: it comes first.
    silent = [f"rank {rank} exited with code {code}" for rank, code in deaths.items()
              if rank not in errors]  # fmt: skip
    reasons = silent + [f"rank {rank}: {message}" for rank, message in errors.items()] + notes
    return measured, "; ".join(reasons) or None


def rank_parser(prog: str) -> argparse.ArgumentParser:
    """The command line every rank process takes: its job, its report pipe, its place."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--job", required=True, type=json.loads)
    parser.add_argument("--report-fd", required=True, type=int)
    parser.add_argument("--rank", type=int, default=0)
    parser.add_argument("--world", type=int, default=1)
    parser.add_argument(
        "--master", default="127.0.0.1:0", help="rank 0's HOST:PORT, or a file:// rendezvous"
    )
    parser.add_argument("--local-rank", type=int, default=None, help="GPU index on this host")
    parser.add_argument("--tf-workers", type=json.loads, default=None, help="TF workers' HOST:PORT")
    parser.add_argument("--tf-task", type=int, default=0, help="this TF worker's index")
    return parser


def stdin_closed() -> bool:
    """A rank's stop signal from its parent: stdin turns readable at end of file."""
    return bool(select.select([sys.stdin], [], [], 0)[0])


def _ask_to_stop(process: subprocess.Popen[bytes]) -> None:
    if process.stdin is not None and not process.stdin.closed:
        process.stdin.close()


def _end(process: subprocess.Popen[bytes], kill: bool) -> int | None:
    """Wait for a rank to exit, terminated first when `kill` (killed if it ignores that);
    return its exit code, or None where our own signal ended it."""
    _ask_to_stop(process)
    sent = None
    if kill and process.poll() is None:
        process.terminate()
        sent = -signal.SIGTERM
    try:
        code = process.wait(timeout=EXIT_GRACE_S)
    except subprocess.TimeoutExpired:
        process.kill()
        code, sent = process.wait(), -signal.SIGKILL
    return None if code == sent else code
