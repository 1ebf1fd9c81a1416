"""Rank processes: start them, watch them, stop them, and say why a run failed.

Used wherever a framework's collective engine needs one process per GPU: all-reduce, and
data-parallel training. A rank is a child that speaks frames (protocol/child.py), as the worker
itself does to the agent: its own frames on stdout (`Reporter` writes them: the worker's
`progress`, `result` and `job_end`), a stop asked by closing its stdin, its stderr kept for why
it died and passed on to the worker's. The first failure ends the run at once, because the
survivors of a dead peer can block in a collective until their timeout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import select
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

from dltui.bench.backends import error_text
from dltui.plans.names import RUN_FOLDERS_ENV
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.protocol.child import ChildStream, spawn
from dltui.protocol.errors import ProtocolError
from dltui.protocol.framing import encode_frame
from dltui.protocol.messages import JobEnd, JobProgress, JobResult, Message
from dltui.protocol.stream import claim_stdout
from dltui.protocol.wire import to_wire

Result = KernelResult | ModelResult
OnResult = Callable[[Result], None]
R = TypeVar("R", bound=Result)
OnProgress = Callable[..., None]
"""on_progress(done, total, label[, fraction]): as the worker's JobProgress frames."""
ShouldStop = Callable[[], bool]

EXIT_GRACE_S = 10.0
PROGRESS_INTERVAL_S = 0.5
POLL_S = 0.1
"""How often the worker looks at its stop flag and its ranks' exit codes."""
LAST_WORDS_S = 2.0
"""How long the worker waits, once a rank has exited, for the frames and stderr lines it wrote
before it ended (a process it started may hold its pipes open longer)."""


class Reporter:
    """A rank's side of its report pipe: the worker's own frames, one write each. The `job` a
    frame names is the rank ("rank 1"); the worker knows it anyway by the pipe it came on."""

    def __init__(self, frames: BinaryIO, rank: int) -> None:
        self._frames = frames
        self.rank = rank
        self.name = f"rank {rank}"
        self._last_progress = 0.0

    @classmethod
    def on_stdout(cls, rank: int) -> Reporter:
        """Frames on this process's stdout, and anything else printed there to stderr."""
        return cls(claim_stdout(), rank)

    def _send(self, message: Message) -> None:
        frame = memoryview(encode_frame(to_wire(message)))
        while frame:  # a pipe may take a large frame in parts
            frame = frame[self._frames.write(frame) or 0 :]
        self._frames.flush()

    def result(self, result: Result) -> None:
        self._send(JobResult.of(self.name, result))

    def error(self, message: str) -> None:
        self._send(JobEnd(self.name, "failed", message, time.time()))

    def done(self) -> None:
        self._send(JobEnd(self.name, "done", None, time.time()))

    def progress(self, fraction: float) -> None:
        """How far this rank's case is; sent at most every PROGRESS_INTERVAL_S."""
        now = time.monotonic()
        if now - self._last_progress >= PROGRESS_INTERVAL_S:
            self._last_progress = now
            fraction = round(min(max(fraction, 0.0), 1.0), 4)
            self._send(JobProgress(self.name, 0, 0, "", fraction))


def run_rank(report: Reporter, work: Callable[[], None]) -> int:
    """A rank process's exit status: 0 after `work`; 1 after any framework error, which goes to
    the report pipe as its `job_end` (and its traceback to stderr)."""
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
    report.done()
    return 0


def exit_rank(status: int) -> None:
    """End a rank process once its report is sent, without the interpreter's teardown: the
    frameworks' C++ threads (Gloo's, TensorFlow's) can abort in their destructors at exit
    ("terminate called without an active exception"), which would turn a finished rank into
    a killed one."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


@dataclass(frozen=True, slots=True)
class RunFolder:
    """A folder of one run's own on this server, gone when the run is (`run_folder()`)."""

    path: Path

    @property
    def rendezvous(self) -> str:
        """Where the run's ranks meet: a file, not a port. A port free when chosen can be taken
        before rank 0 binds it (seen under parallel tests); torch.distributed's file store
        needs none."""
        return (self.path / "store").as_uri()

    def environment(
        self, framework: str, placement: dict[str, str] | None
    ) -> dict[str, str] | None:
        """What the ranks' environment adds: their placement on GPUs, and TensorFlow's
        temporary files kept here. Its autograph writes each function it converts to a file
        that it removes only at an interpreter exit, which ranks skip (`exit_rank`): every run
        left ~10 in /tmp, and an agent that benchmarks for weeks would fill it."""
        added = dict(placement or {})
        if framework == "tensorflow":
            added["TMPDIR"] = str(self.path)
        return added or None


@contextmanager
def run_folder() -> Iterator[RunFolder]:
    """A run's folder, removed with whatever its ranks left in it; inside the job's folder
    where the agent gave one, which it removes even when the worker is killed mid-run."""
    parent = os.environ.get(RUN_FOLDERS_ENV) or None
    with tempfile.TemporaryDirectory(prefix="dltui-ranks-", dir=parent) as folder:
        yield RunFolder(Path(folder))


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


def backward_and_step(loss: Any, optimizer: Any, scaler: Any | None) -> None:
    """One step's gradients and update, through the gradient scaler where fp16 needs one."""
    optimizer.zero_grad(set_to_none=True)
    if scaler is None:
        loss.backward()
        optimizer.step()
    else:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


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
    progress frames say how far the current one is. Without `reports` (no global rank 0 here)
    no result is expected, so none missing is a failure. `env` is added to the ranks'
    environment (their placement on GPUs).

    Each rank has a pipe of its own, read by the one frame loop (protocol/stream.py). The
    first failure (a rank's error, a bad frame, a rank that died, silence) ends the run at
    once: the other ranks are terminated, not waited for, because the survivors of a dead peer
    may block in a collective until timeout.
    """
    run = _RankRun(labels, reports, on_result, on_progress, result_type)
    return asyncio.run(run.supervise(commands, silence_s, should_stop, env))


class _RankRun(Generic[R]):
    """One run's ranks as the worker sees them: what they reported, and why the run failed."""

    def __init__(
        self,
        labels: list[str],
        reports: bool,
        on_result: Callable[[R], None],
        on_progress: OnProgress,
        result_type: type[R],
    ) -> None:
        self.labels = labels
        self.reports = reports
        self.on_result = on_result
        self.on_progress = on_progress
        self.result_type = result_type
        self.measured = 0
        self.stopping = False
        self.errors: dict[str, str] = {}
        """What went wrong, by rank: its own error, or what was wrong with its frames."""
        self.deaths: dict[str, ChildStream] = {}
        """Ranks that exited with an error code on their own (not from our signal)."""
        self.notes: list[str] = []
        self.last_news = time.monotonic()

    @property
    def failed(self) -> bool:
        return bool(self.errors or self.deaths or self.notes)

    async def supervise(
        self,
        commands: list[list[str]],
        silence_s: float,
        should_stop: ShouldStop,
        env: dict[str, str] | None,
    ) -> tuple[int, str | None]:
        labels = self.labels
        self.on_progress(0, len(labels), labels[0])
        environment = {**os.environ, **env} if env else None
        ranks: list[ChildStream] = []
        followers: list[asyncio.Task[None]] = []
        finished = False
        try:
            for index, command in enumerate(commands):
                rank = await spawn(command, rank_name(command, index), environment,
                                   own_session=False, relay=_to_stderr)  # fmt: skip
                ranks.append(rank)
                followers.append(asyncio.create_task(self._follow(rank)))
            self.last_news = time.monotonic()
            while not self.failed:
                if not self.stopping and should_stop():
                    self.stopping = True
                    for rank in ranks:
                        rank.close_stdin()
                if not (running := [task for task in followers if not task.done()]):
                    break  # every rank has closed its pipe: each has ended, or is ending
                await asyncio.wait(running, timeout=POLL_S, return_when=asyncio.FIRST_COMPLETED)
                for task in followers:
                    if task.done():
                        task.result()  # what a callback raised goes to the worker's caller
                self._note_deaths(ranks)
                if time.monotonic() - self.last_news > silence_s:
                    self.notes.append(f"no report from any rank for {silence_s:.0f} s")
            finished = not self.failed
        finally:
            await self._end(ranks, followers, kill=not finished)
        for task in followers:
            if not task.cancelled():
                task.result()
        return self.measured, self._why()

    async def _follow(self, rank: ChildStream) -> None:
        """Take a rank's frames until it closes its pipe; a bad frame is that rank's error."""
        try:
            while True:
                self._handle_frame(rank.what, await rank.receive())
        except EOFError:
            return
        except ProtocolError as exc:
            self.errors.setdefault(rank.what, f"a bad frame on its report pipe: {exc}")

    def _handle_frame(self, rank: str, message: Message) -> None:
        """One frame of `rank`'s (the pipe it came on says whose, whatever its `job` says)."""
        self.last_news = time.monotonic()
        labels = self.labels
        if isinstance(message, JobResult):
            result = message.result or message.model
            if not isinstance(result, self.result_type):
                raise ProtocolError(f"a result that is not a {self.result_type.__name__}")
            self.on_result(result)
            self.measured += 1
            if self.measured < len(labels) and not self.stopping:
                self.on_progress(self.measured, len(labels), labels[self.measured])
        elif isinstance(message, JobProgress):
            if self.measured < len(labels) and not self.stopping:
                self.on_progress(self.measured, len(labels), labels[self.measured],
                                 message.fraction)  # fmt: skip
        elif isinstance(message, JobEnd):
            if message.state != "done":
                self.errors.setdefault(rank, message.error or message.state)
        else:
            raise ProtocolError(f"a {message.TYPE!r} frame, which a rank does not send")

    def _note_deaths(self, ranks: list[ChildStream]) -> None:
        for rank in ranks:
            if rank.process.returncode:
                self.deaths.setdefault(rank.what, rank)

    async def _end(
        self, ranks: list[ChildStream], followers: list[asyncio.Task[None]], kill: bool
    ) -> None:
        """End every rank (terminated first where `kill`), then read what they wrote before
        they ended, their frames and their last stderr lines."""
        codes = await asyncio.gather(*(_exit(rank, kill) for rank in ranks))
        for rank, code in zip(ranks, codes, strict=True):
            if code:
                self.deaths.setdefault(rank.what, rank)
        said = [asyncio.ensure_future(rank.said_all()) for rank in ranks]
        if followers or said:
            await asyncio.wait([*followers, *said], timeout=LAST_WORDS_S)
        for task in [*followers, *said]:
            task.cancel()
        # Each ended (an exception a callback raised is kept for the caller to raise).
        await asyncio.gather(*followers, *said, return_exceptions=True)
        for rank in ranks:
            rank.forget_stderr()

    def _why(self) -> str | None:
        """Why the run failed, in words; None where it did not."""
        measured, labels = self.measured, self.labels
        if self.reports and not (self.failed or self.stopping) and measured < len(labels):
            self.notes.append(
                f"the ranks ended after {measured} of {len(labels)} sizes, with no error"
            )
        # A rank that died without a word usually caused the others' errors: it comes first.
        silent = [rank.death() for name, rank in self.deaths.items() if name not in self.errors]
        said = [f"{name}: {message}" for name, message in self.errors.items()]
        return "; ".join(silent + said + self.notes) or None


def rank_name(command: Sequence[str], index: int) -> str:
    """A rank as its errors name it: its global rank (TensorFlow: its worker index), else its
    place among this server's ranks."""
    args = list(command)
    for flag in ("--tf-task", "--rank"):
        if flag in args[:-1]:
            return f"rank {args[args.index(flag) + 1]}"
    return f"rank {index}"


def _to_stderr(line: str) -> None:
    """A rank's stderr line, passed on to the worker's (where the agent keeps its tail)."""
    print(line, file=sys.stderr, flush=True)


def rank_parser(prog: str) -> argparse.ArgumentParser:
    """The command line every rank process takes: its job and its place."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--job", required=True, type=json.loads)
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


async def _exit(rank: ChildStream, kill: bool) -> int | None:
    """Wait for a rank to exit, its stdin closed and, when `kill`, terminated first (killed if
    it ignores that); its exit code, or None where our own signal ended it."""
    rank.close_stdin()
    sent = None
    if kill and rank.process.returncode is None:
        rank.send_signal(signal.SIGTERM)
        sent = -signal.SIGTERM
    code = await _exited(rank, EXIT_GRACE_S)
    if code is None:
        rank.send_signal(signal.SIGKILL)
        code, sent = await _exited(rank, None), -signal.SIGKILL
    return None if code == sent else code


async def _exited(rank: ChildStream, timeout_s: float | None) -> int | None:
    """Its exit code once it has exited; None after `timeout_s`. Read as it is set, not through
    `Process.wait`, which (Python 3.11) waits too for every pipe to close, and a process the
    rank started may hold its stderr open."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while (code := rank.process.returncode) is None:
        if deadline is not None and time.monotonic() > deadline:
            return None
        await asyncio.sleep(POLL_S / 2)
    return code
