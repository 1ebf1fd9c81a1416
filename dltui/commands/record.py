"""`dltui record -o FILE [AGENT ...]`: a client session whose one sink is a recording, headless.

For cron and CI: it runs for `--duration` seconds, or until SIGINT or SIGTERM, then closes the
file cleanly. The session is the TUI's own, so the file holds exactly what a TUI would have
shown, gaps (`link` frames) included. With `--plan FILE` it also runs the plans (a headless
run, as `dltui bench` makes one) and stops when they end; the file's assertions then decide
the exit status. With `--fail-on` it stops as soon as an event that severe arrives.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import stat
import sys
from pathlib import Path

from dltui.client.campaign import check_layout, is_across
from dltui.client.plan_run import PlanRun
from dltui.client.session import ClientSession
from dltui.client.target import Target
from dltui.commands import exit_status
from dltui.commands.headless import Say, run_plans_headless
from dltui.commands.options import (
    add_connection_options,
    add_rate_option,
    apply_connection_options,
    secret_option,
    target_argument,
)
from dltui.errors import DltuiError, UsageError
from dltui.formatting import counted, fmt_bytes
from dltui.plans.files import PlanFile, load_plan_file
from dltui.protocol.messages import SEVERITIES, Event, JobState, Message, Severity, Welcome
from dltui.recording.format import RecordingError
from dltui.recording.live import start_recording, stop_recording
from dltui.recording.reader import RecordingReader
from dltui.recording.writer import RecordingWriter

AFTER_PLAN_S = 2.0
"""How long the recording goes on after the plans end: the servers settling."""
CANCEL_WAIT_S = 10.0
"""How long a stopped recording waits for the agents to confirm its jobs cancelled (an agent
kills a worker that has not stopped within 3 s of being asked)."""


class RecordingStopped(DltuiError):
    """A write failed: the recording stopped, and the file holds what came before."""

    kind = "write"


class AssertionsFailed(DltuiError):
    """A plan file's assertions did not all pass (each failure was said)."""

    kind = "assertion"


class EventArrived(DltuiError):
    """`--fail-on`: an event that severe arrived; the recording holds it and stopped there."""

    kind = "event"


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dltui record",
        description="Record every frame from agents to a file, headless (for cron and CI).",
        epilog=exit_status.epilog(
            exit_status.OK, exit_status.FAILED, exit_status.USAGE, exit_status.REFUSED,
            exit_status.BUSY, exit_status.ASSERTION_FAILED, exit_status.UNREACHABLE,
            exit_status.EVENT, exit_status.WRITE_FAILED, exit_status.INTERRUPTED,
        ),
    )  # fmt: skip
    parser.add_argument(
        "agents", nargs="*", type=target_argument, metavar="AGENT", help="default: local"
    )
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="FILE")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace FILE if it exists (a link there is "
        "replaced, never followed); without it an existing FILE is refused",
    )  # fmt: skip
    parser.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
    parser.add_argument(
        "--plan", type=Path, metavar="FILE", help="a TOML plan to run while recording; stop "
        f"after (its [assert] checks then decide the exit status: {exit_status.ASSERTION_FAILED}"
        " when one fails)",
    )  # fmt: skip
    parser.add_argument(
        "--fail-on", choices=("warning", "critical"), help="stop and exit "
        f"{exit_status.EVENT} as soon as an event this severe (or worse) arrives: a health "
        "problem or an agent's alert rule",
    )  # fmt: skip
    add_rate_option(parser)
    add_connection_options(parser)
    return parser


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    args = parser.parse_args(argv)
    if args.duration is not None and not args.duration > 0:
        raise UsageError("--duration must be a positive number of seconds")
    secret = secret_option(args.secret_file)
    plan = PlanFile([]) if args.plan is None else load_plan_file(args.plan)
    targets = apply_connection_options(args, args.agents or [Target("local")])
    for each in plan.plans:  # as bench does: before a file is made or an agent asked
        check_layout(each, len(targets), is_across(each, len(targets)))
    session = ClientSession(targets, secret, args.rate)
    return asyncio.run(
        _record(session, args.output, args.duration, plan, args.fail_on, args.overwrite)
    )


def _say(line: str, *, note: bool = False) -> None:
    print(f"dltui record: {line}", file=sys.stderr)


class _Alarm:
    """A sink: the first event at `fail_on` or worse, which stops the recording."""

    def __init__(self, fail_on: Severity | None, stop: asyncio.Event) -> None:
        self.fail_on = SEVERITIES.index(fail_on) if fail_on is not None else None
        self.stop = stop
        self.raised: tuple[str, Event] | None = None

    def __call__(self, source: str, message: Message) -> None:
        if (isinstance(message, Event) and self.fail_on is not None and self.raised is None
                and message.state != "resolved"
                and SEVERITIES.index(message.severity) >= self.fail_on):  # fmt: skip
            self.raised = (source, message)
            self.stop.set()


async def _record(
    session: ClientSession,
    path: Path,
    duration: float | None,
    plan: PlanFile,
    fail_on: Severity | None,
    overwrite: bool,
) -> int:
    """Record until stopped (with plans: until they end, and a moment more); the exit status."""
    stop = asyncio.Event()  # a signal, the writer's failure, or an event that severe
    loop = asyncio.get_running_loop()
    replacing = overwrite and _replaceable(path)
    writing = path.with_name(f".{path.name}.{os.getpid()}.new") if replacing else path
    try:
        writer = start_recording(session, writing, lambda _: loop.call_soon_threadsafe(stop.set))
    except FileExistsError:
        if path.is_dir():
            raise UsageError(f"{path} is a folder: name the recording's file") from None
        raise UsageError(f"{path} exists; say --overwrite to replace it") from None
    except OSError as exc:
        raise UsageError(f"cannot create {path}: {exc.strerror}") from None
    if replacing:
        session.subscribe(_Replace(writer, path))
    alarm = _Alarm(fail_on, stop)
    session.subscribe(alarm)
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    _say(f"recording {counted(len(session.connections), 'agent')} to {path}")
    verdict: list[str] = []  # said once the file is closed, after what it holds

    def keep(line: str, *, note: bool = False) -> None:
        verdict.append(line)

    try:
        async with session:
            status = await _until_stopped(session, plan, stop, duration, keep)
            names = session.names()
    finally:
        stop_recording(session, writer)
        if writer.path != path:  # --overwrite, and no agent ever said who it is
            writer.path.unlink()
            _say(f"{path} is kept as it was: no agent was reached to record")
        elif writer.failure is not None:
            raise RecordingStopped(writer.failure)
        else:
            _read_back(path, writer.records)
            _say(f"{writer.records} frames, {fmt_bytes(writer.bytes_written)} in {path}")
    if alarm.raised is not None:
        source, event = alarm.raised
        where = f"GPU {event.gpu}" if event.gpu is not None else "host"
        raise EventArrived(f"{event.severity} event from {names.get(source, source)} {where}: "
                           f"{event.detail}")  # fmt: skip
    for line in verdict:
        _say(line)
    if status == exit_status.ASSERTION_FAILED:
        raise AssertionsFailed(f"{counted(len(verdict), 'assertion failure')} of "
                               f"{counted(len(plan.assertions), 'assertion')}")  # fmt: skip
    return status


class _Replace:
    """`--overwrite`: the new recording is written beside the old one and takes its name once
    an agent says who it is (a link there is replaced, never followed). Until then, a run
    that reaches no agent leaves the old recording as it was."""

    def __init__(self, writer: RecordingWriter, target: Path) -> None:
        self.writer = writer
        self.target = target

    def __call__(self, source: str, message: Message) -> None:
        if isinstance(message, Welcome) and self.writer.path != self.target:
            os.replace(self.writer.path, self.target)
            self.writer.path = self.target


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


def _replaceable(path: Path) -> bool:
    """A file or a link at `path` (a folder, a pipe or a device is never removed)."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISLNK(mode)


async def _until_stopped(
    session: ClientSession,
    plan: PlanFile,
    stop: asyncio.Event,
    duration: float | None,
    say: Say,
) -> int:
    """Until a signal, the duration, or the plans' end and a moment more: the exit status."""
    if not plan.plans:
        await _wait_for(stop, duration)
        # Kept trying all along: an agent never reached (a wrong secret never mends) is no
        # success, though what was seen of it, the attempts, is in the file.
        if (never := session.failed_before_welcome()) is not None:
            raise never
        return exit_status.OK

    runs: list[PlanRun] = []

    def plans() -> PlanRun:
        agents = session.connections
        runs.append(PlanRun([(p, is_across(p, len(agents))) for p in plan.plans], agents))
        return runs[0]

    async def ended(run: PlanRun, state: JobState) -> None:
        for failure in run.failures:
            _say(failure)
        await _wait_for(stop, AFTER_PLAN_S)

    headless = run_plans_headless(session, plans, say, plan.assertions, ended=ended)
    ran = asyncio.ensure_future(headless)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait([stopped, ran], timeout=duration, return_when="FIRST_COMPLETED")
        if not ran.done() and runs:
            # Stopped while the plans ran: their jobs are cancelled on the agents, which say
            # so, as `dltui bench` does on Ctrl-C; plans that had ended are checked as ended.
            await runs[0].cancel()
            await asyncio.wait([ran], timeout=CANCEL_WAIT_S)
        if not ran.done():
            return exit_status.INTERRUPTED  # stopped before the plans ended
        status = ran.result()  # Unreachable now, when an agent could not be reached
        if status == exit_status.INTERRUPTED and not stopped.done():
            say(f"--duration {duration:g} s ended the recording before its plans: their jobs "
                "were cancelled, and no assertion was checked")  # fmt: skip
        return status
    finally:
        ran.cancel()
        stopped.cancel()


async def _wait_for(stop: asyncio.Event, timeout: float | None) -> None:
    try:
        await asyncio.wait_for(stop.wait(), timeout)
    except TimeoutError:
        pass
