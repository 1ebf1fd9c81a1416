"""The real recordings under tests/fixtures, made with `dltui record` while a benchmark ran:
on a 2-GPU H200 machine (bf16 GEMMs, then an all-reduce over NVLink) and on this CPU machine
(the same cases: `dltui record --plan tests/fixtures/cpu-kernels.toml`). Replayed into fleet
state, they give what the live TUI showed."""

from __future__ import annotations

from pathlib import Path

import pytest

from dltui.fleet.compare import kernel_row
from dltui.fleet.state import Fleet
from dltui.protocol.messages import JobEnd
from dltui.recording.reader import RecordingReader

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def replay(name: str) -> Fleet:
    reader = RecordingReader(FIXTURES / name)
    fleet = Fleet()
    for record in reader:
        fleet.apply(record.source, record.message)
    assert reader.damage == []
    return fleet


def test_the_h200_recording_shows_the_load_and_the_nvlink_traffic():
    (server,) = replay("h200x2-kernels.dlrec").servers.values()
    assert server.inventory is not None
    assert [gpu.name for gpu in server.inventory.gpus] == ["NVIDIA H200"] * 2
    assert all(gpu.nvlink_links == 18 for gpu in server.inventory.gpus)
    job = server.latest_job
    assert job is not None and job.state == "done" and len(job.results) == 17
    gemm = max((r for r in job.results if r.kind == "gemm"), key=lambda r: r.tflops)
    assert gemm.tflops > 500 and gemm.ratio > 5  # bf16 against the V100's published figure
    busbw = max(r.busbw_gbps for r in job.results if r.kind == "allreduce")
    assert busbw > 200
    # The telemetry recorded during the run: tensor cores busy, NVLink carrying the all-reduce.
    peak = {name: max(v for _, v in server.gpus[0].series[name].points())
            for name in ("tensor_active", "nvlink_tx", "power")}  # fmt: skip
    assert peak["tensor_active"] > 80 and peak["power"] > 500
    assert peak["nvlink_tx"] == pytest.approx(busbw * 1e9, rel=0.25)


def test_the_cpu_recording_has_the_same_shape_of_session():
    (server,) = replay("cpu-kernels.dlrec").servers.values()
    assert server.inventory is not None and server.inventory.gpus == []
    assert server.inventory.nvml_error
    job = server.latest_job
    assert job is not None and job.state == "done"
    assert {r.kind for r in job.results} == {"gemm", "allreduce"}
    assert server.samples >= 50 and server.host["cpu"].last() is not None
    ends = [r.message for r in RecordingReader(FIXTURES / "cpu-kernels.dlrec")
            if isinstance(r.message, JobEnd)]  # fmt: skip
    assert len(ends) == 1


def test_the_demo_pair_ran_the_same_cases():
    def cases(name: str) -> list[tuple[object, ...]]:
        (server,) = replay(name).servers.values()
        job = server.latest_job
        assert job is not None
        return [kernel_row(result)[0] for result in job.results]

    assert cases("cpu-kernels.dlrec") == cases("h200x2-kernels.dlrec")
