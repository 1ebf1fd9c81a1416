"""`r`: record every frame the app receives to dltui-DATE-TIME.dlrec here, or stop.

The recorder is a sink of the app's client session while it records (`recording/live.py`, as
`dltui record` has it); the title line shows its file and size. A write that fails (a full
disk, a file system gone read-only) stops the recording and says why.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from dltui.formatting import counted, fmt_bytes
from dltui.recording import SUFFIX
from dltui.recording.live import start_recording, stop_recording
from dltui.recording.writer import RecordingWriter
from dltui.tui.app_part import AppPart


class RecordingToggle(AppPart):
    """The recording `r` starts and stops in `DltuiApp`."""

    recorder: RecordingWriter | None = None
    """The recording being written, while there is one."""

    def action_record(self) -> None:
        """Start or stop recording every frame to dltui-DATE-TIME.dlrec here."""
        if self.recorder is not None:
            recorder, self.recorder = self.recorder, None
            stop_recording(self.session, recorder)
            self.sub_title = self._summary
            self.notify(f"recorded {counted(recorder.records, 'frame')} to {recorder.path}",
                        markup=False)  # fmt: skip
            return
        path = Path(time.strftime("dltui-%Y%m%d-%H%M%S", time.localtime()) + SUFFIX)
        loop = asyncio.get_running_loop()

        def failed(why: str) -> None:  # on the writer's thread
            loop.call_soon_threadsafe(self._recording_failed, why)

        try:
            self.recorder = start_recording(self.session, path, failed)
        except OSError as exc:
            self.notify(f"cannot record to {path}: {exc.strerror}", severity="error", markup=False)
            return
        self.notify(f"recording to {path}", markup=False)

    def _recording_failed(self, failure: str) -> None:
        """A write failed (a full disk, a file system gone read-only): the recording stopped."""
        recorder = self.recorder
        if recorder is not None and recorder.failure == failure:
            self.recorder = None
            stop_recording(self.session, recorder)
        self.notify(failure, title="recording stopped", severity="error", timeout=60, markup=False)

    def _recording_status(self) -> str:
        """'● REC dltui-….dlrec 1.2 MiB · ', the title line's start; '' while not recording."""
        recorder = self.recorder
        if recorder is None:
            return ""
        return f"● REC {recorder.path.name} {fmt_bytes(recorder.bytes_written)} · "

    def _close_recording(self) -> None:
        """The app is closing: the recording ends with what it has."""
        if self.recorder is not None:
            self.recorder.close()
