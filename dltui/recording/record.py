"""`dltui record`: a client session whose one sink is a recording, headless.

With plans (`--plan FILE`) it also runs them on the agents and stops when they end.

For cron and CI: it runs for `--duration` seconds, or until SIGINT or SIGTERM, then closes the
file cleanly. The session is the TUI's own, so the file holds exactly what a TUI would have
shown, gaps (`link` frames) included. With `fail_on` it stops as soon as an event of that
severity or worse arrives (exit 4); a plan file's assertions are checked once its plans end
(exit 5 when one fails).
"""

from __future__ import annotations

import asyncio
import signal
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dltui import version
from dltui.client.campaign import is_across
from dltui.client.plan_run import PlanRun
from dltui.client.session import ClientSession
from dltui.client.target import Target
from dltui.errors import DltuiError, UsageError
from dltui.formatting import fmt_bytes
from dltui.plans.assertions import EXIT_FAILED, Assertion, cases, failures
from dltui.protocol.messages import (
    SEVERITIES,
    Event,
    JobResult,
    JobState,
    KernelResult,
    Message,
    ModelResult,
    Plan,
    Severity,
)
from dltui.recording.format import Header, RecordingError
from dltui.recording.reader import RecordingReader
from dltui.recording.writer import RecordingWriter

AFTER_PLAN_S = 2.0
EXIT_WRITE_FAILED = 74
"""sysexits' EX_IOERR: the file system refused a write (full, read-only, over a size limit)."""


class RecordingStopped(DltuiError):
    """A write failed: the recording stopped, and the file holds what came before."""

    exit_status = EXIT_WRITE_FAILED


class EventArrived(DltuiError):
    """`--fail-on`: an event that severe arrived; the recording holds it and stopped there."""

    exit_status = 4


class AssertionsFailed(DltuiError):
    """A plan file's assertions did not all pass (each failure was printed)."""

    exit_status = EXIT_FAILED


class _Watch:
    """A sink: the first event at `fail_on` or worse, and every result, by server."""

    def __init__(self, fail_on: Severity | None, stop: asyncio.Event) -> None:
        self.fail_on = SEVERITIES.index(fail_on) if fail_on is not None else None
        self.stop = stop
        self.alarm: tuple[str, Event] | None = None
        self.kernels: list[tuple[str, KernelResult]] = []
        self.models: list[tuple[str, ModelResult]] = []

    def __call__(self, source: str, message: Message) -> None:
        if isinstance(message, JobResult):
            if message.result is not None:
                self.kernels.append((source, message.result))
            if message.model is not None:
                self.models.append((source, message.model))
        elif (isinstance(message, Event) and self.fail_on is not None and self.alarm is None
              and message.state != "resolved"
              and SEVERITIES.index(message.severity) >= self.fail_on):  # fmt: skip
            self.alarm = (source, message)
            self.stop.set()


async def record(
    targets: list[Target],
    path: Path,
    duration: float | None,
    secret: bytes | None,
    rate_hz: float,
    plans: list[Plan],
    fail_on: Severity | None = None,
    assertions: list[Assertion] | None = None,
    overwrite: bool = False,
) -> JobState:
    """Record until stopped; with plans, how they ended ("cancelled" if stopped first).
    Unreachable when an agent the plans need cannot be reached; EventArrived when an event of
    `fail_on` or worse did; AssertionsFailed when the plans ended and an assertion failed."""
    stop = asyncio.Event()  # a signal, the writer's failure, or an event that severe
    loop = asyncio.get_running_loop()
    writer = _create(path, targets, lambda _: loop.call_soon_threadsafe(stop.set), overwrite)
    session = ClientSession(targets, secret, rate_hz)
    session.subscribe(writer.write)
    watch = _Watch(fail_on, stop)
    session.subscribe(watch)
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"dltui record: recording {len(targets)} agent(s) to {path}", file=sys.stderr)
    try:
        async with session:
            state = await _until_stopped(session, plans, stop, duration)
            names = session.names()
    finally:
        writer.close()
        if writer.failure is not None:
            raise RecordingStopped(writer.failure)
        _read_back(path, writer.records)
        size = fmt_bytes(writer.bytes_written)
        print(f"dltui record: {writer.records} frames, {size} in {path}", file=sys.stderr)
    if watch.alarm is not None:
        source, event = watch.alarm
        where = f"GPU {event.gpu}" if event.gpu is not None else "host"
        raise EventArrived(f"{event.severity} event from {names.get(source, source)} {where}: "
                           f"{event.detail}")  # fmt: skip
    if assertions and state == "done":
        _check(assertions, watch, names)
    return state


def _check(assertions: list[Assertion], watch: _Watch, names: dict[str, str]) -> None:
    kernels = [(names.get(source, source), result) for source, result in watch.kernels]
    models = [(names.get(source, source), result) for source, result in watch.models]
    lines = failures(assertions, cases(kernels, models))
    for line in lines:
        print(f"dltui record: {line}", file=sys.stderr)
    if lines:
        raise AssertionsFailed(f"{len(lines)} assertion failure(s) of {len(assertions)} "
                               "assertion(s)")  # fmt: skip
    print(f"dltui record: all {len(assertions)} assertion(s) passed", file=sys.stderr)


def _read_back(path: Path, written: int) -> None:
    """RecordingStopped unless the file reads back whole: every record written, no damage.
    What an agent sent passed the wire's checks; the file's are its own (a welcome near the
    frame limit, say), and a recording that replay would refuse is no success."""
    try:
        reader = RecordingReader(path)
        read = sum(1 for _ in reader)
    except (RecordingError, OSError) as exc:
        raise RecordingStopped(f"{path} does not read back: {exc}") from None
    damage = reader.damage_report()
    if damage is not None or read != written:
        why = damage or f"{read} of the {written} records written read back"
        raise RecordingStopped(f"{path} does not read back whole: {why}")


def _create(
    path: Path, targets: list[Target], on_failure: Callable[[str], object], overwrite: bool
) -> RecordingWriter:
    header = Header(
        dltui=version(),
        started=time.time(),
        sources={target.label: target.label for target in targets},
    )
    try:
        if overwrite and _replaceable(path):
            path.unlink()  # a link itself, never what it points at
        return RecordingWriter(path, header, on_failure)
    except FileExistsError:
        raise UsageError(f"{path} exists; say --overwrite to replace it") from None
    except OSError as exc:
        raise UsageError(f"cannot create {path}: {exc.strerror}") from None


def _replaceable(path: Path) -> bool:
    """A file or a link at `path` (a folder, a pipe or a device is never removed)."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISLNK(mode)


async def _until_stopped(
    session: ClientSession, plans: list[Plan], stop: asyncio.Event, duration: float | None
) -> JobState:
    """Until a signal, the duration, or the plans' end and a moment more."""
    stopped = asyncio.ensure_future(stop.wait())
    ran = asyncio.ensure_future(_run(session, plans)) if plans else None
    waits: list[asyncio.Future[Any]] = [stopped] if ran is None else [stopped, ran]
    try:
        await asyncio.wait(waits, timeout=duration, return_when="FIRST_COMPLETED")
        if ran is None or not ran.done():
            return "cancelled" if plans else "done"  # stopped before the plans ended
        state = ran.result()  # Unreachable now, when an agent could not be reached
        # A moment more, so the telemetry shows the servers settling after the plan.
        await asyncio.wait([stopped], timeout=AFTER_PLAN_S)
        return state
    finally:
        for future in waits:
            future.cancel()


async def _run(session: ClientSession, plans: list[Plan]) -> JobState:
    """The plans one after the other on every agent (one run across them for a multi-agent
    all-reduce); a plan that does not end `done` stops the rest."""
    await session.welcomed()
    agents = session.connections
    run = PlanRun([(plan, is_across(plan, len(agents))) for plan in plans], agents)
    state = await session.run_plans(run)
    for failure in run.failures:
        print(f"dltui record: {failure}", file=sys.stderr)
    return state
