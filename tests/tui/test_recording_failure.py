"""`r` in the TUI when the disk refuses a write: the recording stops and the screen says so,
with what the file holds (issue #13)."""

from __future__ import annotations

import os

from dltui.client.target import parse_target
from dltui.recording.reader import RecordingReader
from dltui.tui import create_app
from tests.tui.pilot import LIVE_CPU, wait_for_text, wait_until


async def test_r_shows_that_the_recording_stopped(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = create_app([parse_target("local")])
    told: list[tuple[str, str, str]] = []  # (title, severity, message) of each notification
    notify = app.notify

    def spy(message: str, *, title: str = "", severity: str = "information", **more) -> None:
        told.append((title, severity, message))
        notify(message, title=title, severity=severity, **more)

    monkeypatch.setattr(app, "notify", spy)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for_text(pilot, LIVE_CPU)
        await pilot.press("r")
        await wait_until(pilot, lambda: "● REC dltui-" in app.sub_title)
        recorder = app.recorder
        assert recorder is not None
        await wait_until(pilot, lambda: recorder.records >= 5)
        full = os.open("/dev/full", os.O_WRONLY)  # from here on the disk is full
        os.dup2(full, recorder._fd)
        os.close(full)
        await wait_until(pilot, lambda: app.recorder is None and "REC" not in app.sub_title)
        title, severity, message = told[-1]
        assert (title, severity) == ("recording stopped", "error")
        assert message == recorder.failure
        assert "stopped: No space left on device; the file holds" in message
    (path,) = tmp_path.glob("dltui-*.dlrec")
    assert len(RecordingReader(path).read_all()) == recorder.records
