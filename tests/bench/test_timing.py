"""Timing methods against a simulated GPU whose launch path is slower than its kernels.

The simulation keeps two clocks, as a real GPU does: the host pays `launch` seconds per
launch; the device runs queued kernels back to back, each starting when both the device is
free and the host has launched it. Events are stamped on the device's timeline. Every method
of bench/timing.py runs here (the real CUDA graph path runs on the device: tests/gpu).
"""

from __future__ import annotations

import math

import pytest

from dltui.bench import timing
from dltui.bench.energy import HOLD_AT_LIMIT_S, SWINGS, read_window
from dltui.bench.timing import Budget


class SimulatedGpu:
    def __init__(self, kernel_s: float, launch_s: float = 22e-6, mark_s: float = 4e-6) -> None:
        self.kernel_s = kernel_s
        self.launch_s = launch_s
        self.mark_s = mark_s
        self.host = 0.0
        self.device_free = 0.0
        self.kernels = 0
        self.syncs = 0

    def _launch(self, device_work: float, host_cost: float | None = None) -> float:
        """Queue work after one launch; the device time at which it ends."""
        self.host += self.launch_s if host_cost is None else host_cost
        self.device_free = max(self.device_free, self.host) + device_work
        return self.device_free

    # --- the step and the graph --------------------------------------------------------------

    def step(self) -> None:
        self.kernels += 1
        self._launch(self.kernel_s)

    def capture(self, step: timing.Step, count: int) -> timing.Step:
        def replay() -> None:
            self.kernels += count
            self._launch(count * self.kernel_s)  # one launch for the whole graph

        return replay

    # --- the Clock -----------------------------------------------------------------------------

    def now(self) -> float:
        return self.host

    def mark(self) -> object:
        return self._launch(0.0, self.mark_s)

    def seconds(self, begin: object, end: object) -> float:
        assert isinstance(begin, float) and isinstance(end, float)
        return end - begin

    def sync(self) -> None:
        self.syncs += 1
        self.host = max(self.host, self.device_free)


class Steady:
    """A GPU that draws `watts` whatever the time."""

    def __init__(self, watts: float) -> None:
        self.watts = watts

    def joules(self, t: float) -> float:
        return self.watts * t


class Swinging:
    """An H100 at its 700 W limit under a bf16 GEMM (docs/results/energy-window-h100.txt): from
    idle ~780 W at full pace for 0.8 s, then the power swings between 510 and 790 W once every
    1.05 s and the pace with it, from 82% of full at the low to all of it at the high."""

    high, mean, swing, period, plateau = 780.0, 650.0, 140.0, 1.05, 0.8

    def power(self, t: float) -> float:
        if t < self.plateau:
            return self.high
        return self.mean - self.swing * math.sin(2 * math.pi * (t - self.plateau) / self.period)

    def joules(self, t: float) -> float:
        if t < self.plateau:
            return self.high * t
        phase = 2 * math.pi * (t - self.plateau) / self.period
        turn = self.swing * self.period / (2 * math.pi) * (math.cos(phase) - 1)
        return self.high * self.plateau + self.mean * (t - self.plateau) + turn

    def speed(self, t: float) -> float:
        return self.pace(self.power(t))

    @staticmethod
    def pace(watts: float) -> float:
        return 0.82 + 0.18 * (watts - 510.0) / 270.0


class Meter:
    """An energy counter on the simulated GPU that moves every `step_s` of host time by what the
    GPU drew since, as NVML's does; the span it reads is bench/energy's."""

    def __init__(self, gpu: SimulatedGpu, draw: Steady | Swinging, step_s: float = 0.1,
                 limit_w: float | None = None, moves: bool = True) -> None:  # fmt: skip
        self.gpu, self.draw, self.step_s = gpu, draw, step_s
        self.limit_w, self.moves = limit_w, moves
        self.started_at: float | None = None

    def start(self) -> None:
        self.started_at = self.gpu.host

    def window(self, final: bool = False) -> tuple[float, float, float] | None:
        assert self.started_at is not None
        first = math.ceil(self.started_at / self.step_s)
        last = math.floor(self.gpu.host / self.step_s)
        moments = [k * self.step_s for k in range(first, last + 1)] if self.moves else []
        updates = [(t, self.draw.joules(t)) for t in moments]
        return read_window(updates, self.limit_w, final)

    def stop(self) -> None:
        pass


BUDGET = Budget(warmup=3, iterations=400, max_seconds=2.0)


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def test_events_around_each_launch_would_time_the_launch_path():
    """The defect the methods exist for: a 3 µs kernel read as the 22 µs launch."""
    gpu = SimulatedGpu(kernel_s=3e-6)
    begin = gpu.mark()
    gpu.step()
    end = gpu.mark()
    gpu.sync()
    assert gpu.seconds(begin, end) == pytest.approx(22e-6 + 4e-6, rel=0.01)


def test_a_short_kernel_is_timed_from_a_captured_graph():
    gpu = SimulatedGpu(kernel_s=3e-6)
    found = timing.time_step(gpu.step, gpu, BUDGET, capture=gpu.capture)
    assert found.method == "graph"
    assert median(found.samples) == pytest.approx(3e-6, rel=0.05)
    # First sized by a launch-bound guess, then again from a replay: SAMPLE_S of kernels.
    assert found.per_sample == math.ceil(timing.SAMPLE_S / 3e-6)
    assert len(found.samples) >= timing.MIN_SAMPLES
    assert found.iterations >= BUDGET.iterations


def test_without_a_graph_short_kernels_are_batched_and_bound_by_the_launch():
    """Back-to-back launches: the launch path still bounds a kernel shorter than it, which is
    why capture comes first; a kernel longer than a launch is timed right."""
    short = SimulatedGpu(kernel_s=3e-6)
    found = timing.time_step(short.step, short, BUDGET)
    assert found.method == "batch"
    assert median(found.samples) == pytest.approx(22e-6, rel=0.1)
    longer = SimulatedGpu(kernel_s=200e-6)
    found = timing.time_step(longer.step, longer, BUDGET)
    assert found.method == "batch" and found.per_sample > 1
    assert median(found.samples) == pytest.approx(200e-6, rel=0.01)


def test_a_long_kernel_is_captured_too_one_iteration_a_sample():
    """A long step may still hide host gaps (a cuDNN RNN launches per time step): a graph of
    one iteration removes them."""
    gpu = SimulatedGpu(kernel_s=5e-3)
    found = timing.time_step(gpu.step, gpu, BUDGET, capture=gpu.capture)
    assert found.method == "graph" and found.per_sample == 1
    assert median(found.samples) == pytest.approx(5e-3, rel=0.01)


def test_a_long_kernel_that_cannot_be_captured_gets_events_around_each_iteration():
    gpu = SimulatedGpu(kernel_s=5e-3)
    found = timing.time_step(gpu.step, gpu, BUDGET)
    assert found.method == "each" and found.per_sample == 1
    assert median(found.samples) == pytest.approx(5e-3, rel=0.01)


@pytest.mark.parametrize(
    ("kernel_s", "max_seconds", "samples_at_most"),
    [(3e-6, 2.0, 10_000), (5e-3, 0.05, 15), (50e-3, 0.01, 6)],
)
def test_timing_stops_at_the_time_bound_with_at_least_min_samples(
    kernel_s, max_seconds, samples_at_most
):
    gpu = SimulatedGpu(kernel_s)
    budget = Budget(warmup=3, iterations=100_000, max_seconds=max_seconds)
    found = timing.time_step(gpu.step, gpu, budget, capture=gpu.capture)
    assert timing.MIN_SAMPLES <= len(found.samples) <= samples_at_most
    timed = len(found.samples) * found.per_sample * kernel_s
    assert timed <= 2 * max_seconds + timing.MIN_SAMPLES * found.per_sample * kernel_s


def test_warm_up_runs_long_enough_for_clocks_to_ramp():
    gpu = SimulatedGpu(kernel_s=10e-6)
    timing.warm_up(gpu.step, gpu, Budget(warmup=5, iterations=1, max_seconds=1.0))
    assert gpu.kernels * gpu.kernel_s >= timing.WARMUP_S * 0.3  # launch-bound: 32 µs each
    assert gpu.host >= timing.WARMUP_S


def test_each_trial_covers_deepbenchs_count():
    """400 iterations of a 120 µs GEMM, ~50 ms, a trial: TRIALS of them, back to back."""
    gpu = SimulatedGpu(kernel_s=120e-6)
    found = timing.time_step(gpu.step, gpu, BUDGET, capture=gpu.capture)
    timed = found.iterations * gpu.kernel_s
    trials = timing.TRIALS
    assert trials * 400 * gpu.kernel_s <= timed
    assert timed < trials * (2 * 400 * gpu.kernel_s + found.per_sample * gpu.kernel_s)
    assert found.energy is None


class SettlingGpu(SimulatedGpu):
    """Its kernels run 10% slower once `settles_after` of them have run: a clock that the
    power limit brings down after the first burst."""

    def __init__(self, kernel_s: float, settles_after: int) -> None:
        super().__init__(kernel_s)
        self.settles_after = settles_after

    def capture(self, step: timing.Step, count: int) -> timing.Step:
        def replay() -> None:
            self.kernels += count
            settled = self.kernels > self.settles_after
            self._launch(count * self.kernel_s * (1.1 if settled else 1.0))

        return replay


def test_the_figure_is_the_median_over_the_trials():
    """Where the first burst runs before the clock settles, the trials after it outvote it:
    the figure is the settled rate, which a second run would find again."""
    gpu = SettlingGpu(kernel_s=100e-6, settles_after=600)
    found = timing.time_step(gpu.step, gpu, BUDGET, capture=gpu.capture)
    assert found.iterations >= timing.TRIALS * BUDGET.iterations
    assert min(found.samples) == pytest.approx(100e-6, rel=0.01)  # the first burst
    assert median(found.samples) == pytest.approx(110e-6, rel=0.01)


def test_energy_comes_from_a_sustained_run_between_two_counter_updates():
    gpu = SimulatedGpu(kernel_s=300e-6)
    meter = Meter(gpu, Steady(650.0))
    budget = Budget(warmup=3, iterations=400, max_seconds=2.0, sustain_s=0.6)
    found = timing.time_step(gpu.step, gpu, budget, capture=gpu.capture, meter=meter)
    energy = found.energy
    assert energy is not None
    assert energy.seconds >= 0.4 and energy.joules / energy.seconds == pytest.approx(650.0)
    assert energy.seconds_per_iteration == pytest.approx(300e-6, rel=0.01)
    assert gpu.host - meter.started_at < 0.6 + 0.1  # stopped on time, not far past


class SwingingGpu(SimulatedGpu):
    """Its kernels run at the pace the power allows at the moment each replay starts."""

    def __init__(self, kernel_s: float, draw: Swinging) -> None:
        super().__init__(kernel_s)
        self.draw = draw

    def capture(self, step: timing.Step, count: int) -> timing.Step:
        def replay() -> None:
            self.kernels += count
            start = max(self.device_free, self.host + self.launch_s)
            self._launch(count * self.kernel_s / self.draw.speed(start))

        return replay


def test_at_a_swinging_power_limit_the_energy_covers_whole_swings():
    """A fixed 0.6 s from idle would read the first high alone: 9% off in work per joule."""
    draw = Swinging()
    gpu = SwingingGpu(kernel_s=300e-6, draw=draw)
    meter = Meter(gpu, draw, limit_w=700.0)
    budget = Budget(warmup=3, iterations=400, max_seconds=0.3, sustain_s=0.6)
    found = timing.time_step(gpu.step, gpu, budget, capture=gpu.capture, meter=meter)
    energy = found.energy
    assert energy is not None
    per_joule = energy.seconds / energy.seconds_per_iteration / energy.joules
    # Over whole swings the sine averages out and the pace is linear in the power.
    expected = draw.pace(draw.mean) / gpu.kernel_s / draw.mean
    first_high = 1.0 / gpu.kernel_s / draw.high
    assert abs(first_high / expected - 1) > 0.08  # the phase a fixed window read
    # Cut at the same phase at both ends; run to the longest and read whole, it was 0.44% off.
    assert per_joule == pytest.approx(expected, rel=0.003)
    assert energy.seconds == pytest.approx(SWINGS * draw.period, abs=0.1)
    assert gpu.host - meter.started_at < timing.SUSTAIN_LONGEST_S  # it stopped once it had them


def test_at_the_limit_a_power_that_holds_is_read_once_it_has_held_long_enough():
    gpu = SimulatedGpu(kernel_s=300e-6)
    meter = Meter(gpu, Steady(695.0), limit_w=700.0)
    budget = Budget(warmup=3, iterations=400, max_seconds=0.3, sustain_s=0.6)
    found = timing.time_step(gpu.step, gpu, budget, capture=gpu.capture, meter=meter)
    assert found.energy is not None
    assert found.energy.joules / found.energy.seconds == pytest.approx(695.0)
    span = gpu.host - meter.started_at
    assert HOLD_AT_LIMIT_S <= span < HOLD_AT_LIMIT_S + 0.2


def test_a_counter_that_never_moves_gives_no_energy_after_the_longest_run():
    gpu = SimulatedGpu(kernel_s=300e-6)
    meter = Meter(gpu, Steady(650.0), moves=False)
    budget = Budget(warmup=3, iterations=40, max_seconds=0.3, sustain_s=0.05)
    found = timing.time_step(gpu.step, gpu, budget, capture=gpu.capture, meter=meter)
    assert found.energy is None
    assert timing.SUSTAIN_LONGEST_S <= gpu.host - meter.started_at < timing.SUSTAIN_LONGEST_S + 0.1


def test_a_step_that_cannot_be_captured_is_batched():
    gpu = SimulatedGpu(kernel_s=50e-6)
    found = timing.time_step(gpu.step, gpu, BUDGET, capture=lambda step, count: None)
    assert found.method == "batch"
    assert median(found.samples) == pytest.approx(50e-6, rel=0.01)


def test_wall_clock_times_a_synchronous_cpu_kernel():
    calls = []
    found = timing.time_step(
        lambda: calls.append(sum(range(2000))),
        timing.WallClock(),
        Budget(warmup=1, iterations=20, max_seconds=0.05),
    )
    assert found.method in ("batch", "each")
    assert len(calls) >= found.iterations >= 20
    assert 0 < median(found.samples) < 0.01
