"""Benchmark phases in a recording: each timed case (a kernel case, or a training run's timed
steps), with the telemetry seen while it ran.

The phase concept is `dltui.fleet.phases`, shared with the live TUI; here it is fed recorded
frames at their receive time, so the cases and the samples line up whatever the agents'
clocks say.
"""

from __future__ import annotations

from collections.abc import Iterable

from dltui.fleet.phases import Phase, PhaseTracker
from dltui.protocol.messages import JobProgress
from dltui.recording.format import Record


def phases(records: list[Record]) -> list[Phase]:
    """The cases of a recording that ended with a result, in the order they started."""
    return tracked(records).finished()


def tracked(records: Iterable[Record]) -> PhaseTracker:
    """Every case of a recording, as its frames in their order make them."""
    tracker = PhaseTracker()
    for record in records:
        tracker.observe(record.source, record.message, record.received)
    return tracker


def starts_case(last_done: dict[tuple[str, str], int], record: Record) -> bool:
    """Whether a frame begins a case, as the tracker sees it: progress with a new `done` short
    of the job's total (later progress of a case only says how far it is). `last_done` is
    updated; the caller keeps it across the recording."""
    message = record.message
    if not isinstance(message, JobProgress):
        return False
    key = (record.source, message.job)
    new = last_done.get(key) != message.done
    last_done[key] = message.done
    return new and message.done < message.total
