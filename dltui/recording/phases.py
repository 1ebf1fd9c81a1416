"""Benchmark phases in a recording: each timed kernel case, with the telemetry seen while it ran.

The phase concept is `dltui.fleet.phases`, shared with the live TUI; here it is fed recorded
frames at their receive time, so the cases and the samples line up whatever the agents'
clocks say.
"""

from __future__ import annotations

from dltui.fleet.phases import Phase, PhaseTracker
from dltui.protocol.messages import KernelResult
from dltui.recording.format import Record


def phases(records: list[Record]) -> list[Phase]:
    """The kernel cases of a recording that ended with a result, in the order they started."""
    tracker = PhaseTracker()
    for record in records:
        tracker.observe(record.source, record.message, record.received)
    return [phase for phase in tracker.finished() if isinstance(phase.result, KernelResult)]
