"""Replay, headless: play, pause, speed, seek both ways, next benchmark case."""

from __future__ import annotations

from pathlib import Path

import pytest

from dltui.fleet.state import Fleet
from dltui.protocol.messages import JobProgress, Sample
from dltui.recording.replay import SPEEDS, ReplaySet, load_tracks

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
H200 = FIXTURES / "h200x2-kernels.dlrec"
CPU = FIXTURES / "cpu-kernels.dlrec"


def samples_until(track, position: float) -> int:
    return sum(
        isinstance(r.message, Sample) for t, r in zip(track.times, track.records, strict=True)
        if t <= position
    )  # fmt: skip


def test_seeking_both_ways_gives_the_state_at_that_time():
    replay = ReplaySet(load_tracks([H200]), Fleet())
    (track,) = replay.tracks
    (server,) = replay.fleet.servers.values()
    assert server.source == "h200x2-kernels/127.0.0.1:7070"
    assert replay.length == pytest.approx(track.times[-1]) and replay.length > 15
    replay.seek(12.0)
    assert server.samples == samples_until(track, 12.0)
    replay.seek(4.0)  # backwards: rebuilt from the start
    assert server.samples == samples_until(track, 4.0)
    replay.seek(1e9)
    assert replay.position == replay.length and not replay.playing
    assert server.latest_job is not None and server.latest_job.state == "done"


def test_play_pause_and_speed():
    replay = ReplaySet(load_tracks([H200]), Fleet())
    replay.tick(1.0)
    assert replay.position == pytest.approx(1.0)
    replay.toggle()
    replay.tick(5.0)
    assert replay.position == pytest.approx(1.0)  # paused
    replay.toggle()
    replay.faster(2)
    assert replay.speed == 4.0
    replay.tick(1.0)
    assert replay.position == pytest.approx(5.0)
    replay.faster(100)
    assert replay.speed == SPEEDS[-1] == 32.0
    replay.faster(-100)
    assert replay.speed == SPEEDS[0] == 0.25


def test_next_phase_stops_at_each_benchmark_case():
    replay = ReplaySet(load_tracks([H200]), Fleet())
    (track,) = replay.tracks
    starts = [t for t, r in zip(track.times, track.records, strict=True)
              if isinstance(r.message, JobProgress)]  # fmt: skip
    assert replay.next_phase() and replay.position == starts[0]
    assert replay.phase() is not None and "gemm" in replay.phase()
    assert replay.next_phase() and replay.position == starts[1]
    replay.seek(starts[-1])
    assert not replay.next_phase()


def test_two_recordings_side_by_side_on_their_own_clocks():
    replay = ReplaySet(load_tracks([H200, CPU]), Fleet())
    names = list(replay.fleet.servers)
    assert names == ["h200x2-kernels/127.0.0.1:7070", "cpu-kernels/127.0.0.1:7070"]
    replay.seek(3.0)
    for track, server in zip(replay.tracks, replay.fleet.servers.values(), strict=True):
        assert server.samples == samples_until(track, 3.0) > 0
    same = ReplaySet(load_tracks([CPU, CPU]), Fleet())
    assert [t.name for t in same.tracks] == ["cpu-kernels", "cpu-kernels'"]
