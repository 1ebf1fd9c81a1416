"""`dltui record`: connect to agents and write every frame they send to a file, headless.

For cron and CI: it runs for `--duration` seconds, or until SIGINT or SIGTERM, then closes the
file cleanly. The connections are the TUI's own, so the file holds exactly what a TUI would
have shown, gaps (`link` frames) included.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from pathlib import Path

from dltui import version
from dltui.client.connection import AgentConnection
from dltui.client.target import Target
from dltui.formatting import fmt_bytes
from dltui.recording.format import Header
from dltui.recording.writer import RecordingWriter


async def record(
    targets: list[Target],
    path: Path,
    duration: float | None,
    secret: bytes | None,
    rate_hz: float,
) -> int:
    header = Header(
        dltui=version(),
        started=time.time(),
        sources={target.label: target.label for target in targets},
    )
    try:
        writer = RecordingWriter(path, header)
    except FileExistsError:
        print(f"dltui record: {path} exists; recordings are never overwritten", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"dltui record: cannot create {path}: {exc.strerror}", file=sys.stderr)
        return 2
    connections = [AgentConnection(t, writer.write, secret, rate_hz) for t in targets]
    tasks = [asyncio.create_task(connection.run()) for connection in connections]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"dltui record: recording {len(targets)} agent(s) to {path}", file=sys.stderr)
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), duration)
    finally:
        await asyncio.gather(*(connection.stop() for connection in connections))
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        writer.close()
    size = fmt_bytes(writer.bytes_written)
    print(f"dltui record: {writer.records} frames, {size} in {path}", file=sys.stderr)
    return 0


def run(
    targets: list[Target], path: Path, duration: float | None, secret: bytes | None, rate_hz: float
) -> int:
    return asyncio.run(record(targets, path, duration, secret, rate_hz))
