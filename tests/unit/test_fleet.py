from __future__ import annotations

import math

from dltui.fleet.series import Series
from dltui.fleet.state import Fleet
from dltui.protocol.messages import ConnectionState, Pong, Sample, Welcome
from dltui.protocol.samples import GpuSample, HostSample
from tests.fakes.messages import INVENTORY


def test_series_ring_keeps_the_newest_points_in_order():
    series = Series(capacity=4)
    assert series.last() is None and series.tail(3) == []
    for i in range(10):
        series.append(float(i), i * 10.0)
    assert len(series) == 4
    assert series.tail(10) == [60.0, 70.0, 80.0, 90.0]
    assert series.tail(2) == [80.0, 90.0]
    assert series.points(2) == [(8.0, 80.0), (9.0, 90.0)]
    assert series.last() == 90.0 and series.last_time() == 9.0


def test_series_gap_is_marked_once_and_hides_the_last_value():
    series = Series(capacity=8)
    series.append(1.0, 5.0)
    series.mark_gap(2.0)
    series.mark_gap(3.0)
    assert len(series) == 2 and series.last() is None and math.isnan(series.tail(1)[0])


def sample(seq: int, wall: float, util: float) -> Sample:
    return Sample(
        seq,
        wall,
        float(seq),
        HostSample({"cpu": 50.0}, [40.0, 60.0]),
        [GpuSample(0, "ok", {"util_gpu": util}), GpuSample(1, "lost", {})],
    )


def test_fleet_builds_server_state_from_messages():
    fleet = Fleet()
    fleet.add("a:1")
    assert fleet.servers["a:1"].link == "connecting" and fleet.servers["a:1"].name == "a:1"
    fleet.apply("a:1", Welcome("id1", INVENTORY, 10.0, 100.0, 1.0))
    fleet.apply("a:1", ConnectionState("live", 100.0, None, 0.002, 30.0))
    version = fleet.version
    fleet.apply("a:1", sample(1, 130.5, 99.0))
    assert fleet.version > version
    server = fleet.servers["a:1"]
    assert server.name == "gpu-01" and server.link == "live" and server.samples == 1
    assert server.gpus[0].last("util_gpu") == 99.0
    assert server.gpus[1].state == "lost"
    # Agent time 130.5 with the agent 30 s ahead is client time 100.5.
    assert server.gpus[0].series["util_gpu"].last_time() == 100.5
    assert server.host["cpu"].last() == 50.0 and server.cpu_per_core == [40.0, 60.0]
    fleet.apply("a:1", Pong(1, 0.0, 0.0, dropped=7))
    assert server.dropped == 7


def test_going_offline_marks_a_gap_and_keeps_the_clock_offset():
    fleet = Fleet()
    fleet.apply("a", ConnectionState("live", 1.0, None, 0.001, 2.0))
    fleet.apply("a", sample(1, 3.0, 10.0))
    fleet.apply("a", ConnectionState("offline", 5.0, "connection refused"))
    server = fleet.servers["a"]
    assert server.link == "offline" and server.link_since == 5.0
    assert server.link_detail == "connection refused"
    assert server.gpus[0].last("util_gpu") is None  # the gap hides the stale value
    assert server.offset == 2.0
    assert fleet.summary() == {"offline": 1}


def test_jobs_collect_progress_results_and_their_end():
    from dltui.protocol.messages import JobEnd, JobProgress, JobResult
    from tests.fakes.messages import RESULT

    fleet = Fleet()
    assert fleet.add("a").latest_job is None
    fleet.apply("a", JobProgress("j1", 1, 4, "gemm"))
    fleet.apply("a", JobResult("j1", RESULT))
    fleet.apply("a", JobProgress("j2", 0, 2, "conv"))  # a later job becomes the latest
    fleet.apply("a", JobEnd("j1", "done", None, 5.0))
    server = fleet.servers["a"]
    first, second = server.jobs.values()
    assert (first.state, first.done, first.total, first.results, first.ended) == (
        "done", 1, 4, [RESULT], 5.0,
    )  # fmt: skip
    assert server.latest_job is second and second.state == "running"
