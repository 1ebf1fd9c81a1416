"""Replay, headless: play, pause, speed, seek both ways, next benchmark case."""

from __future__ import annotations

from pathlib import Path

import pytest

from dltui.fleet.state import Fleet
from dltui.protocol.messages import JobProgress, Sample
from dltui.recording.format import Header
from dltui.recording.reader import RecordingReader
from dltui.recording.replay import SPEEDS, WINDOW_S, ReplaySet, load_tracks, parse_position
from dltui.recording.writer import RecordingWriter

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
H200 = FIXTURES / "h200x2-kernels.dlrec"
CPU = FIXTURES / "cpu-kernels.dlrec"


def samples_until(track, position: float) -> int:
    records = RecordingReader(track.timeline.path).read_all()
    return sum(isinstance(r.message, Sample) and r.received - track.start <= position
               for r in records)  # fmt: skip


def test_seeking_both_ways_gives_the_state_at_that_time():
    replay = ReplaySet(load_tracks([H200]), Fleet())
    (track,) = replay.tracks
    (server,) = replay.fleet.servers.values()
    assert server.source == "h200x2-kernels/127.0.0.1:7070"
    records = RecordingReader(H200).read_all()
    assert replay.length == pytest.approx(records[-1].received - records[0].received)
    assert replay.length > 15
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
    records = RecordingReader(H200).read_all()
    starts = [r.received - records[0].received for r in records
              if isinstance(r.message, JobProgress)]  # fmt: skip
    assert replay.next_phase() and replay.position == pytest.approx(starts[0])
    assert replay.phase() is not None and "gemm" in replay.phase()
    assert replay.next_phase() and replay.position == pytest.approx(starts[1])
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


def test_a_recording_of_nothing_replays_as_nothing(tmp_path):
    empty = tmp_path / "empty.dlrec"
    RecordingWriter(empty, Header("0.1.0", 1.7e9)).close()
    replay = ReplaySet(load_tracks([empty, CPU]), Fleet())
    assert replay.tracks[0].length == 0 and list(replay.fleet.servers) == [
        "cpu-kernels/127.0.0.1:7070"
    ]
    replay.seek(5.0)
    replay.seek(1.0)
    assert replay.position == 1.0 and replay.next_phase()


def test_typed_positions():
    assert parse_position("1:23:45", 1e5) == 5025
    assert parse_position("23:45", 1e5) == 1425
    assert parse_position("90s", 1e5) == parse_position("90", 1e5) == 90
    assert parse_position("1h30m", 1e5) == 5400 and parse_position("2m 10s", 1e5) == 130
    assert parse_position("50%", 3600) == 1800 and parse_position(" 12.5% ", 80) == 10
    for bad in ("", "soon", "150%", "1:2:3:4", "-5s", "5 parsecs"):
        with pytest.raises(ValueError, match="is not a time"):
            parse_position(bad, 100)


def test_a_cases_figures_are_the_same_however_the_replay_got_there():
    """A jump replays WINDOW_S of samples alone: cases before them had no power and no per
    watt after a jump, where playing through gave them."""
    models = Path(__file__).parents[2] / "docs" / "results" / "models-h200-defaults.dlrec"

    def figures(replay: ReplaySet) -> list[tuple[str, dict[str, float], float | None]]:
        finished = replay.fleet.phases.finished()
        return [(phase.label, phase.telemetry, phase.per_watt) for phase in finished]

    jumped = ReplaySet(load_tracks([models]), Fleet())
    jumped.seek(jumped.length * 0.95)
    played = ReplaySet(load_tracks([models]), Fleet())
    while played.position < jumped.position:  # forward in steps a jump would not take
        played.seek(min(played.position + WINDOW_S / 2, jumped.position))
    assert len(figures(played)) == 3 and all(power for _, _, power in figures(played))
    assert figures(jumped) == figures(played)
    jumped.seek(jumped.length * 0.5)  # and back again
    assert figures(jumped) == figures(played)[: len(figures(jumped))] and figures(jumped)
