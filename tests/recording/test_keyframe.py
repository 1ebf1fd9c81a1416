"""Keyframes hold what shapes the fleet's state: applied to an empty fleet, they build what all
the frames before them built (but the samples' series, which a seek replays)."""

from __future__ import annotations

from pathlib import Path

from dltui.fleet.state import Fleet
from dltui.protocol.bench_results import ModelResult
from dltui.protocol.messages import (
    ConnectionState,
    ErrorMessage,
    JobEnd,
    JobProgress,
    JobResult,
    Pong,
    Sample,
    Welcome,
)
from dltui.protocol.samples import HostSample
from dltui.recording.format import Record
from dltui.recording.keyframe import StateTracker, decode_keyframe, encode_keyframe
from dltui.recording.reader import RecordingReader

H200 = Path(__file__).resolve().parents[1] / "fixtures/h200x2-kernels.dlrec"
T0 = 1.7e9


def training(job: str, gpus: int, rate: float) -> ModelResult:
    return ModelResult("alexnet", "torch", "cpu", "fp32", gpus, 4, steps=5, images_per_s=rate,
                       step_times=[0.1, 0.11, 0.1])  # fmt: skip


def frames() -> list[Record]:
    """Two servers' worth of the frames that carry state, in an order a session has them."""
    welcome = next(r.message for r in RecordingReader(H200) if isinstance(r.message, Welcome))
    messages = [
        ("a", ConnectionState("connecting", T0)), ("a", ConnectionState("live", T0 + 1)),
        ("a", welcome), ("a", ConnectionState("live", T0 + 2, rtt=0.001, offset=0.25)),
        ("b", ConnectionState("live", T0 + 2)),
        ("a", Pong(1, T0, 0.0, dropped=0)), ("a", JobProgress("j1", 0, 2, "alexnet 1 GPU")),
        ("a", JobProgress("j1", 0, 2, "alexnet 1 GPU", fraction=0.4)),
        ("a", JobResult("j1", model=training("j1", 1, 100.0))), ("b", ErrorMessage("busy", "no")),
        ("a", JobProgress("j1", 1, 2, "alexnet 2 GPUs")), ("a", Pong(2, T0, 0.0, dropped=3)),
        ("a", ConnectionState("live", T0 + 5, rtt=0.002, offset=0.5)),
        ("a", JobProgress("j1", 1, 2, "alexnet 2 GPUs", fraction=0.7)),
        ("a", ConnectionState("offline", T0 + 6, "reset by peer")),
        ("a", ConnectionState("connecting", T0 + 7)),
        ("a", ConnectionState("live", T0 + 8, rtt=0.003)), ("b", ErrorMessage("gone", "again")),
        ("a", JobProgress("j1", 1, 2, "alexnet 2 GPUs", fraction=0.9)),
        ("a", Sample(1, T0 + 8, 1.0, HostSample({"cpu": 1.0}))),
    ]  # fmt: skip
    return [Record(T0 + i, source, message) for i, (source, message) in enumerate(messages)]


def built(records: list[Record]) -> Fleet:
    fleet = Fleet()
    for record in records:
        fleet.apply(record.source, record.message)
    return fleet


def shown(fleet: Fleet) -> list[tuple]:
    return [(s.link, s.link_since, s.link_detail, s.rtt, s.offset, s.agent_id, s.inventory,
             s.dropped, s.last_error, s.jobs) for s in fleet.servers.values()]  # fmt: skip


def test_a_keyframe_anywhere_builds_the_state_of_all_before_it():
    records = frames()
    for cut in range(len(records) + 1):
        tracker = StateTracker()
        for record in records[:cut]:
            tracker.observe(record)
        keyframe = decode_keyframe(encode_keyframe(tracker.keyframe(T0 + cut)))
        fleet = built(keyframe.state + keyframe.jobs)
        for source in built(records[:cut]).servers:  # sources without state frames: absent
            fleet.add(source)
        assert shown(fleet) == shown(built(records[:cut])), cut
        assert list(keyframe.counts) == list(dict.fromkeys(r.source for r in records[:cut]))


def test_keyframes_in_a_row_hold_each_job_frame_once_and_drop_superseded_progress():
    records = frames()
    first = StateTracker()
    for record in records[:9]:
        first.observe(record)
    one = first.keyframe(T0 + 9)
    second = StateTracker(one, one.jobs)  # as a reader rebuilding the next keyframe would
    for record in records[9:]:
        second.observe(record)
    two = second.keyframe(T0 + 30)
    assert shown(built(two.state + one.jobs + two.jobs)) == shown(built(records))
    # The 0.4 progress is superseded by the result's case's later frames; 0.7 by 0.9.
    fractions = [r.message.fraction for r in one.jobs + two.jobs
                 if isinstance(r.message, JobProgress)]  # fmt: skip
    assert fractions == [None, 0.4, None, 0.9] and two.counts == {"a": 1, "b": 0}
    assert sum(isinstance(r.message, JobResult | JobEnd) for r in one.jobs + two.jobs) == 1
