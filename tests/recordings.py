"""Helpers for tests that read recordings as they are written."""

from __future__ import annotations

from dltui.protocol.messages import Sample
from dltui.recording.format import RecordingError
from dltui.recording.reader import RecordingReader


def seconds_on_disk(path) -> float:
    """How long a recording still being written spans so far, by its samples' receive times."""
    try:
        received = [r.received for r in RecordingReader(path) if isinstance(r.message, Sample)]
    except RecordingError:  # not there yet, or its header not yet whole
        return -1.0
    return received[-1] - received[0] if received else -1.0
