"""`dltui record`: connect to agents and write every frame they send to a file, headless.

With `--plan FILE` it also runs that file's benchmark plans on them and stops when they end.

For cron and CI: it runs for `--duration` seconds, or until SIGINT or SIGTERM, then closes the
file cleanly. The connections are the TUI's own, so the file holds exactly what a TUI would
have shown, gaps (`link` frames) included.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from dltui import version
from dltui.client.campaign import Campaign, is_across
from dltui.client.connection import AgentConnection
from dltui.client.run_job import EXIT_CODES
from dltui.client.target import Target
from dltui.formatting import fmt_bytes
from dltui.protocol.messages import JobState, Message, Plan, Welcome
from dltui.recording.format import Header
from dltui.recording.writer import RecordingWriter

AFTER_PLAN_S = 2.0
EXIT_WRITE_FAILED = 74
"""sysexits' EX_IOERR: the file system refused a write (full, read-only, over a size limit)."""


class _Tee:
    """Every frame to the file, and on to the campaigns; an eye on who has said hello."""

    def __init__(self, writer: RecordingWriter) -> None:
        self.writer = writer
        self.welcomes: dict[str, Welcome] = {}
        self.campaigns: list[Campaign] = []
        self.changed = asyncio.Event()

    def __call__(self, source: str, message: Message) -> None:
        self.writer.write(source, message)
        for campaign in self.campaigns:
            campaign.observe(source, message)
        if isinstance(message, Welcome):
            self.welcomes[source] = message
            self.changed.set()

    async def until(self, condition: Callable[[], bool]) -> None:
        while not condition():
            self.changed.clear()
            await self.changed.wait()


async def _run_plans(plans: list[Plan], connections: list[AgentConnection], tee: _Tee) -> JobState:
    """Run the plans one after the other, each on every agent (one run across them for a
    multi-agent all-reduce), and wait for every job to end; the worst end is the recording's
    exit status, and a plan that does not end `done` stops the rest."""
    sources = [connection.source for connection in connections]
    await asyncio.wait_for(tee.until(lambda: all(s in tee.welcomes for s in sources)), 60)
    state: JobState = "done"
    for plan in plans:
        campaign = Campaign(plan, list(connections), is_across(plan, len(connections)))
        tee.campaigns.append(campaign)
        state = await campaign.run()
        for failure in campaign.failures():
            print(f"dltui record: {failure}", file=sys.stderr)
        if state != "done":
            break
    return state


async def record(
    targets: list[Target],
    path: Path,
    duration: float | None,
    secret: bytes | None,
    rate_hz: float,
    plans: list[Plan],
) -> int:
    header = Header(
        dltui=version(),
        started=time.time(),
        sources={target.label: target.label for target in targets},
    )
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()  # a signal, or the writer's failure
    try:
        writer = RecordingWriter(path, header, lambda _: loop.call_soon_threadsafe(stop.set))
    except FileExistsError:
        print(f"dltui record: {path} exists; recordings are never overwritten", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"dltui record: cannot create {path}: {exc.strerror}", file=sys.stderr)
        return 2
    tee = _Tee(writer)
    connections = [AgentConnection(t, tee, secret, rate_hz) for t in targets]
    tasks = [asyncio.create_task(connection.run()) for connection in connections]
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"dltui record: recording {len(targets)} agent(s) to {path}", file=sys.stderr)
    state: JobState = "done"
    try:
        stopped = asyncio.ensure_future(stop.wait())
        waits = [stopped]
        if plans:
            waits.append(asyncio.ensure_future(_run_plans(plans, connections, tee)))
        done, pending = await asyncio.wait(waits, timeout=duration, return_when="FIRST_COMPLETED")
        finished = [f for f in done if f is not stopped]
        if finished:
            state = finished[0].result()
            # A moment more, so the telemetry shows the servers settling after the plan.
            await asyncio.wait([stopped], timeout=AFTER_PLAN_S)
        elif plans:
            state = "cancelled"  # stopped by a signal or the duration before the plan ended
        for future in (*pending, stopped):
            future.cancel()
    except TimeoutError:
        print("dltui record: not every agent answered within 60 s", file=sys.stderr)
        state = "failed"
    finally:
        await asyncio.gather(*(connection.stop() for connection in connections))
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        writer.close()
    if writer.failure is not None:
        print(f"dltui record: {writer.failure}", file=sys.stderr)
        return EXIT_WRITE_FAILED
    size = fmt_bytes(writer.bytes_written)
    print(f"dltui record: {writer.records} frames, {size} in {path}", file=sys.stderr)
    return EXIT_CODES[state]


def run(
    targets: list[Target],
    path: Path,
    duration: float | None,
    secret: bytes | None,
    rate_hz: float,
    plans: list[Plan],
) -> int:
    return asyncio.run(record(targets, path, duration, secret, rate_hz, plans))
