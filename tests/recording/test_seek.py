"""Seeking in a long recording gives the state that playing from the start gives.

The recording is the real H200 session looped for six minutes (benchmarks/long_recording.py):
longer than the fleet's two-minute window, with a benchmark job at 0 and 240 s and an outage at
120 s, so seeks start from keyframes well after the start and land in jobs, outages and gaps,
and after jobs and reconnections that only the keyframes still know of.
"""

from __future__ import annotations

import math

import pytest

from benchmarks.long_recording import looped
from dltui.fleet.state import Fleet, ServerView
from dltui.recording.format import Header
from dltui.recording.replay import WINDOW_S, ReplaySet, load_tracks
from dltui.recording.writer import RecordingWriter

SECONDS = 350.0
EVERY_S = 240.0


@pytest.fixture(scope="module")
def long_recording(tmp_path_factory):
    path = tmp_path_factory.mktemp("seek") / "long.dlrec"
    writer = RecordingWriter(path, Header("test", 1.7e9))
    for record in looped(SECONDS, gpus=4, every_s=EVERY_S):
        writer.write(record.source, record.message, record.received)
    writer.close()
    return path


def view(server: ServerView, since: float) -> dict:
    """What a server shows: everything but the series' points older than `since`."""

    def points(series):
        return [(t, "gap" if math.isnan(v) else v) for t, v in series.points() if t >= since]

    series = {f"host.{name}": points(s) for name, s in server.host.items()}
    for index, gpu in server.gpus.items():
        series |= {f"gpu{index}.{name}": points(s) for name, s in gpu.series.items()}
    return {
        "link": (server.link, server.link_since, server.link_detail, server.rtt, server.offset),
        "who": (server.agent_id, server.inventory),
        "counts": (server.samples, server.dropped, server.last_error, server.last_sample_time),
        "now": (server.cpu_per_core, {i: (g.state, g.errors) for i, g in server.gpus.items()}),
        "jobs": server.jobs,
        "series": series,
        "phases": [(p.job, p.case, p.label, p.start, p.end, p.result) for p in server.phases],
        "phase telemetry": [p.telemetry for p in server.phases if p.start >= since],
    }


def played(path, position: float) -> ReplaySet:
    """A replay moved to `position` the slow way: played on in steps, never seeking far."""
    replay = ReplaySet(load_tracks([path]), Fleet())
    position = min(position, replay.length)
    while replay.position < position:
        replay.seek(min(replay.position + 7.0, position))
    return replay


@pytest.mark.parametrize("position", [35.0, 122.0, 200.0, 250.25, 300.0, 340.0, SECONDS])
def test_a_seek_lands_in_the_state_that_playing_builds(long_recording, position):
    truth = played(long_recording, position)
    (track,) = truth.tracks
    assert track.timeline.stretch_at(track.start + position - WINDOW_S) > 0 or position < 130
    if position >= 300:  # what began before the window comes from the keyframe
        assert truth.fleet.servers[next(iter(truth.fleet.servers))].link_since < (
            track.start + position - WINDOW_S - 10
        )
    jumped = ReplaySet(load_tracks([long_recording]), Fleet())
    jumped.seek(position)  # forwards, from the start
    back = ReplaySet(load_tracks([long_recording]), Fleet())
    back.seek(back.length)
    back.seek(position)  # backwards, from the end
    since = track.start + truth.position - WINDOW_S + 1.0
    (expected,) = (view(s, since) for s in truth.fleet.servers.values())
    assert expected["series"]["gpu3.power"]  # there is something to compare
    for replay in (jumped, back):
        assert replay.position == truth.position
        (server,) = replay.fleet.servers.values()
        assert view(server, since) == expected
    job = expected["jobs"][next(reversed(expected["jobs"]))]
    assert job.results  # the comparisons include the jobs' results


def test_a_seek_into_an_outage_shows_the_server_offline_since_it_dropped(long_recording):
    replay = ReplaySet(load_tracks([long_recording]), Fleet())
    replay.seek(EVERY_S / 2 + 2.0)  # two seconds into the outage
    (server,) = replay.fleet.servers.values()
    start = replay.tracks[0].start
    assert server.link == "connecting" and server.link_since == pytest.approx(start + 120.0)
    assert server.offset is not None  # the last estimate is kept through the outage
