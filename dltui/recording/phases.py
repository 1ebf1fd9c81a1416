"""Benchmark phases in a recording: each timed case (a kernel case, or a training run), with
the telemetry seen while it ran.

The phase concept is `dltui.fleet.phases`, shared with the live TUI; here it is fed recorded
frames at their receive time, so the cases and the samples line up whatever the agents'
clocks say.

A training run's case also holds what its measurement leaves out: building the model,
compiling it (a minute and more with `torch.compile`) and the warm-up steps, at a fraction of
the power the timed steps draw. So a training run's phase here is its timed steps: it ends at
its result and starts the sum of its step times before, and its telemetry (images/s per watt
above all) is of those steps.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from dltui.fleet.phases import Phase, PhaseTracker
from dltui.protocol.messages import JobProgress, ModelResult, Sample
from dltui.recording.format import Record


def phases(records: list[Record]) -> list[Phase]:
    """The cases of a recording that ended with a result, in the order they started."""
    tracker = PhaseTracker()
    samples: dict[str, tuple[list[float], list[Sample]]] = {}
    for record in records:
        tracker.observe(record.source, record.message, record.received)
        if isinstance(record.message, Sample):
            times, found = samples.setdefault(record.source, ([], []))
            times.append(record.received)
            found.append(record.message)
    return [_timed(p, *samples.get(p.source, ([], []))) for p in tracker.finished()]


def _timed(phase: Phase, times: list[float], samples: list[Sample]) -> Phase:
    """A training run's phase narrowed to its timed steps; any other phase as it is."""
    result = phase.result
    if not isinstance(result, ModelResult) or not result.step_times or phase.end is None:
        return phase
    start = max(phase.end - sum(result.step_times), phase.start)
    timed = Phase(phase.source, phase.job, phase.case, phase.label, start, phase.end, result)
    for index in range(bisect_left(times, start), bisect_right(times, phase.end)):
        timed.add(times[index], samples[index].gpus)
    return timed


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
