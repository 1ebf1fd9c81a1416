"""Benchmark phases from frames: where a case starts and ends, and the telemetry inside it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dltui.fleet.phases import PhaseTracker
from dltui.fleet.state import Fleet
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.protocol.messages import JobEnd, JobProgress, JobResult, Sample
from dltui.protocol.samples import GpuSample, HostSample

GEMM = KernelResult("gemm", "torch", "cuda:1", "bf16", "fwd", "4096x4096x4096 NN", tflops=600.0)


def sample(t: float, power: tuple[float, float], energy: tuple[float, float] | None = None):
    gpus = []
    for index, watts in enumerate(power):
        values = {"power": watts, "util_gpu": 100.0 if watts > 100 else 0.0, "pcie_tx": 1e9}
        if energy is not None:
            values["energy"] = energy[index]
        gpus.append(GpuSample(index, "ok", values))
    return Sample(0, t, t, HostSample({}), gpus)


def test_a_case_shorter_than_a_field_s_window_has_no_figure_of_it() -> None:
    """A GPM or link-rate reading spans a second (util 200 ms): a case that ends sooner
    shows none rather than the reading taken before it began (tensor 0% beside 600
    TFLOP/s); a longer one shows the mean."""
    for seconds, expected in ((0.15, {"power"}), (0.5, {"power", "util_gpu"}),
                              (1.5, {"power", "util_gpu", "pcie_tx"})):  # fmt: skip
        tracker = PhaseTracker()
        tracker.observe("a", JobProgress("j", 0, 1, "gemm"), 0.0)
        tracker.observe("a", sample(seconds / 2, (70, 600)), seconds / 2)
        tracker.observe("a", JobResult("j", GEMM), seconds)
        (phase,) = tracker.finished()
        assert set(phase.telemetry) == expected, seconds
        assert phase.too_short("pcie_tx") == (seconds < 1.0)


def test_a_case_runs_from_a_new_done_to_its_result_over_the_gpu_it_used() -> None:
    tracker = PhaseTracker()
    tracker.observe("a", sample(0.0, (70, 70)), 0.0)
    started = tracker.observe("a", JobProgress("j", 0, 2, "gemm 4096"), 0.5)
    assert started is not None and started.start == 0.5 and started.case == 0
    for t in (0.6, 0.7, 0.8):
        tracker.observe("a", sample(t, (70, 600)), t)
    # A progress frame with the same `done` (a training run's fraction) starts nothing.
    assert tracker.observe("a", JobProgress("j", 0, 2, "gemm 4096", fraction=0.5), 0.8) is None
    tracker.observe("a", JobResult("j", GEMM), 0.9)
    tracker.observe("a", sample(1.0, (70, 70)), 1.0)  # after the case: not in it
    (phase,) = tracker.finished()
    assert (phase.start, phase.end, phase.result) == (0.5, 0.9, GEMM)
    assert phase.gpus() == {1}  # cuda:1 ran it; GPU 0 idled beside it
    # PCIe rates average over 1 s: a 0.4 s case has no reading of its own.
    assert phase.telemetry == {"power": 600.0, "util_gpu": 100.0}
    # A kernel's milliseconds are no span to read power over: no per-watt without the
    # energy its worker measured across a sustained run.
    assert phase.per_watt is None
    measured = replace(GEMM, median_s=2e-4, energy_j=300.0, energy_s=0.5, sustained_s=2.5e-4)
    tracker.observe("a", JobProgress("j", 1, 2, "gemm again"), 1.0)
    tracker.observe("a", JobResult.of("j", measured), 1.1)
    assert tracker.finished()[-1].per_watt == pytest.approx(GEMM.tflops / 1.25 / 600.0)
    short = replace(measured, energy_s=0.1)  # under MIN_ENERGY_WINDOW_S: too short to trust
    tracker.observe("a", JobProgress("j", 2, 3, "gemm short"), 1.2)
    tracker.observe("a", JobResult.of("j", short), 1.3)
    assert tracker.finished()[-1].per_watt is None


def test_a_case_on_the_cpu_takes_none_of_the_gpus_readings() -> None:
    """A report once gave a CPU GEMM the idle GPUs' power as its own."""
    tracker = PhaseTracker()
    tracker.observe("a", JobProgress("j", 0, 1, "gemm 64"), 0.0)
    for t in (0.5, 1.0, 1.5):
        tracker.observe("a", sample(t, (150, 150)), t)
    tracker.observe("a", JobResult("j", replace(GEMM, device="cpu")), 2.0)
    (phase,) = tracker.finished()
    assert phase.gpus() == set() and phase.telemetry == {}


def test_energy_counter_gives_the_power_of_a_long_phase() -> None:
    tracker = PhaseTracker()
    tracker.observe("a", JobProgress("j", 0, 1, "resnet50"), 0.0)
    # The counter moves every 5 s; sampled power reads high, the energy says 500 W a GPU.
    for t, energy in ((0.0, 0.0), (4.9, 0.0), (5.0, 2500.0), (9.9, 2500.0), (10.0, 5000.0)):
        tracker.observe("a", sample(t, (650, 650), (energy, energy)), t)
    model = ModelResult("resnet50", "torch", "cuda", "bf16", gpus=2, batch=256, images_per_s=5000)
    tracker.observe("a", JobResult("j", model=model), 10.5)
    (phase,) = tracker.finished()
    assert phase.telemetry["energy_power"] == pytest.approx(1000.0)
    assert phase.telemetry["power"] == pytest.approx(1300.0)
    assert phase.per_watt == pytest.approx(5.0)  # images/s per W, from the energy


def test_a_job_that_ends_without_a_result_closes_its_case_unfinished() -> None:
    tracker = PhaseTracker()
    tracker.observe("a", JobProgress("j", 0, 3, "gemm"), 1.0)
    tracker.observe("b", JobProgress("k", 0, 3, "gemm"), 1.0)
    tracker.observe("a", JobEnd("j", "cancelled"), 2.0)
    assert tracker.phases[0].end == 2.0 and tracker.phases[0].result is None
    assert list(tracker.open) == ["b"] and tracker.finished() == []


def test_the_fleet_puts_phases_on_each_servers_sample_timeline() -> None:
    fleet = Fleet()
    fleet.apply("a", sample(100.0, (70, 70)))
    fleet.apply("a", JobProgress("j", 0, 1, "gemm"))
    fleet.apply("a", sample(100.1, (70, 600)))
    fleet.apply("a", JobResult("j", GEMM))
    (phase,) = fleet.servers["a"].phases
    assert (phase.start, phase.end) == (100.0, 100.1)
    fleet.reset()
    assert fleet.servers["a"].phases == [] and fleet.phases.phases == []


def test_a_case_shorter_than_a_batch_of_frames_lasts_what_its_worker_timed() -> None:
    """The live fleet dates a job frame by the latest sample: a case that starts and ends
    between two samples came with 0 s. Its length is what its worker timed; from an older
    agent, whose results do not say, it is unknown, never 0."""
    fleet = Fleet()
    fleet.apply("a", sample(100.0, (70, 600)))
    fleet.apply("a", JobProgress("j", 0, 2, "gemm 64"))
    fleet.apply("a", JobResult("j", replace(GEMM, case_s=0.03)))
    fleet.apply("a", JobProgress("j", 1, 2, "gemm 128"))
    fleet.apply("a", JobResult("j", GEMM))
    timed, untimed = fleet.servers["a"].phases
    assert timed.start == timed.end == untimed.start == untimed.end == 100.0
    assert timed.seconds == 0.03 and untimed.seconds is None
    # Neither is long enough for a GPM or link-rate reading of its own.
    assert timed.too_short("pcie_tx") and untimed.too_short("pcie_tx")


def test_a_case_timed_by_its_worker_lasts_that_long_however_its_frames_came() -> None:
    """Frames wait in queues on their way; the worker's own time for the case is the truth."""
    tracker = PhaseTracker()
    tracker.observe("a", JobProgress("j", 0, 1, "gemm"), 0.0)
    tracker.observe("a", sample(0.6, (70, 600)), 0.6)
    tracker.observe("a", JobResult("j", replace(GEMM, case_s=1.2)), 0.9)
    (phase,) = tracker.finished()
    assert (phase.end, phase.seconds) == (0.9, 1.2)
    assert not phase.too_short("pcie_tx") and phase.telemetry["pcie_tx"] == 1e9
