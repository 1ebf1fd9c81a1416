"""A recording of a live session, as `dltui record` and the TUI's `r` both start one."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from dltui import version
from dltui.client.session import ClientSession
from dltui.recording.format import Header
from dltui.recording.writer import RecordingWriter


def start_recording(
    session: ClientSession, path: Path, on_failure: Callable[[str], object]
) -> RecordingWriter:
    """A new file at `path` that gets every frame of `session` from now on, after who the
    agents are and how their links stand. OSError (FileExistsError: recordings are never
    overwritten) when it cannot be created; `on_failure(why)`, from the writer's thread, when
    a write fails later."""
    now = time.time()
    writer = RecordingWriter(path, Header(version(), now, session.sources()), on_failure)
    for source, message in session.so_far():
        writer.write(source, message, now)
    session.subscribe(writer.write)
    return writer


def stop_recording(session: ClientSession, writer: RecordingWriter) -> None:
    """No more frames to `writer`; its file closed, whole."""
    session.unsubscribe(writer.write)
    writer.close()
