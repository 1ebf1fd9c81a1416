"""How a kernel is timed: the device's figure, as DeepBench gets it, not the launch path's.

A Python launch costs more than many DeepBench kernels take (docs/results/kernels-h200.md),
and a cuDNN RNN launches a kernel per time step from the host, so a pair of events around each
launch measures the host. Instead, after a warm-up long enough for the clocks to ramp:

- `graph`: the step is captured `per_sample` times in a CUDA graph (sized for ~2 ms, or one
  iteration where one runs longer), and each sample is one replay between one pair of events,
  divided by `per_sample`: no launch gaps at all;
- `batch`: where a step cannot be captured, `per_sample` launches back to back between one
  pair of events (launch gaps hide behind the queued work once it runs longer than them);
- `each`: a step that cannot be captured and runs long (≥ LONG_ITERATION_S) gets its own
  events: a launch is negligible beside it, and every iteration is a sample;
- `loop`: TensorFlow, one compiled function that runs the step `per_sample` times on the
  device, timed by the wall clock around its read-back.

On a CPU the clock is the wall clock and kernels are synchronous: `batch` and `each` apply.
Samples are taken in TRIALS trials back to back, each until the plan's iteration count is
covered (DeepBench's 400 for a GEMM) or its share of the plan's time bound is spent; the figure
is the median of them all, with at least MIN_SAMPLES for a median and a spread.

Why trials: one burst of DeepBench's length starts from whatever state the case before left
the GPU's power management in, and on the H200 a big GEMM's median moved up to 4.9% between
two runs that way while each run was tight within itself; three trials in a row put most
samples where the clock has settled, and no case moved more than 2.83% between two runs
(docs/results/kernels-h200.md). Where a plan asks for energy, the kernel then runs on,
sustained, for `sustain_s` or longer while a meter reads the GPU's energy counter: a per-watt
figure from the energy across the span the meter chose (bench/energy.py), at the rate the
kernel ran at across that same span.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from dltui.plans import formulas

Step = Callable[[], object]

WARMUP_S = 0.01
"""Warm-up runs at least this long (and the plan's count of iterations): an idle GPU's clock
ramps from 345 MHz in a few milliseconds, and five 10 µs launches would not wake it."""
LONG_ITERATION_S = 1e-3
"""From here on an iteration that cannot be captured is timed by its own events."""
SAMPLE_S = 2e-3
"""A batched or captured sample runs about this long: event resolution is ~0.5 µs."""
MAX_PER_SAMPLE = 1000
MIN_SAMPLES = 6
"""Samples per case at the least, whatever the time bound: a median and a spread need them."""
TRIALS = 3
"""Trials per case, each covering the plan's iterations (see the module's docstring)."""
ESTIMATE_LAUNCHES = 8
SUSTAIN_SYNC_S = 0.02
"""The sustained run syncs this often, so the queue stays short and it stops on time."""
SUSTAIN_LONGEST_S = 4.0
"""A sustained run goes on past `sustain_s` while the meter has no span to read (a power that
swings at its limit), up to this: an H100 holds its limit's first high for 0.8 s, then swings
about once a second, and the meter reads two whole swings."""


@dataclass(frozen=True, slots=True)
class Budget:
    warmup: int
    """Warm-up iterations at the least (they also run WARMUP_S at the least)."""
    iterations: int
    """Timed iterations to cover, as DeepBench counts them (GEMM 400, conv 300, RNN 100)."""
    max_seconds: float
    """The timed loop stops here once it has MIN_SAMPLES."""
    sustain_s: float = 0.0
    """With a meter, run on at least this long after the samples, reading the energy (0: no
    run); longer where the meter asks, up to SUSTAIN_LONGEST_S."""


@dataclass(frozen=True, slots=True)
class Energy:
    """What a meter read across a sustained run of the kernel."""

    joules: float
    seconds: float
    """The span the joules cover, as the meter chose it (whole swings of a power that swings)."""
    seconds_per_iteration: float
    """The kernel's time under that sustained load (its clock may sit below the burst's)."""


@dataclass(frozen=True, slots=True)
class Timing:
    """Seconds per iteration, one figure per sample, and how they were taken."""

    samples: list[float]
    method: str
    per_sample: int
    energy: Energy | None = None

    @property
    def iterations(self) -> int:
        return len(self.samples) * self.per_sample


class Clock(Protocol):
    """Marks queued with the work (CUDA events, or the wall clock for synchronous kernels),
    and the host's own clock, which bounds how long timing goes on."""

    def now(self) -> float:
        """The host's seconds (time.perf_counter)."""
        ...

    def mark(self) -> object: ...

    def seconds(self, begin: object, end: object) -> float:
        """Between two marks, once `sync` has returned."""
        ...

    def sync(self) -> None: ...


class WallClock:
    """The host's clock, for work that is done when its call returns (CPU kernels)."""

    def now(self) -> float:
        return time.perf_counter()

    def mark(self) -> object:
        return time.perf_counter()

    def seconds(self, begin: object, end: object) -> float:
        assert isinstance(begin, float) and isinstance(end, float)
        return end - begin

    def sync(self) -> None:
        """Synchronous work is done when it returns."""


class EnergyMeter(Protocol):
    """Reads a GPU's cumulative energy counter while work runs."""

    def start(self) -> None: ...

    def window(self, final: bool = False) -> tuple[float, float, float] | None:
        """(begin, end, joules): the span to read, in the clock's `now`, and the joules drawn
        across it; None while the meter wants the work to run on. With `final`, None only
        where the counter did not move twice."""
        ...

    def stop(self) -> None: ...


Capture = Callable[[Step, int], Step | None]
"""Records `count` iterations of a step as one replayable step; None where it cannot."""


def warm_up(step: Step, clock: Clock, budget: Budget) -> None:
    """Run `step` budget.warmup times and WARMUP_S at the least, within max_seconds."""
    started = clock.now()
    done = 0
    while True:
        step()
        done += 1
        if done % 4 == 0 or done >= budget.warmup:
            clock.sync()
        elapsed = clock.now() - started
        if done >= budget.warmup and (elapsed >= WARMUP_S or elapsed >= budget.max_seconds):
            clock.sync()
            return


def _launches(step: Step, count: int) -> Step:
    def run() -> None:
        for _ in range(count):
            step()

    return run


def estimate(step: Step, clock: Clock, count: int = ESTIMATE_LAUNCHES) -> float:
    """Seconds per call of `count` back-to-back calls: a first guess to size samples."""
    begin = clock.mark()
    _launches(step, count)()
    end = clock.mark()
    clock.sync()
    return clock.seconds(begin, end) / count


def _per_sample(seconds_each: float) -> int:
    """Iterations in a sample of about SAMPLE_S."""
    return max(1, min(MAX_PER_SAMPLE, math.ceil(SAMPLE_S / max(seconds_each, 1e-9))))


def time_step(
    step: Step,
    clock: Clock,
    budget: Budget,
    capture: Capture | None = None,
    captured: str = "graph",
    meter: EnergyMeter | None = None,
) -> Timing:
    """Warm up, choose the method (see the module's docstring), take the samples, and, with a
    meter, run on for budget.sustain_s (or as long as the meter asks) reading the energy.
    `captured` names what `capture` makes (a CUDA graph, TensorFlow's device loop)."""
    warm_up(step, clock, budget)
    guess = estimate(step, clock)
    per_sample = _per_sample(guess)
    replay = capture(step, per_sample) if capture is not None else None
    if replay is not None and capture is not None:
        replay()  # the first replay uploads the graph: not a timed one
        # The guess was the launch path's; a replay has none, so size the graph again.
        better = _per_sample(estimate(replay, clock, 1) / per_sample)
        bigger = capture(step, better) if better > per_sample else None
        if bigger is not None:
            replay, per_sample = bigger, better
            replay()
        clock.sync()
        run, method = replay, captured
    elif guess >= LONG_ITERATION_S:
        run, method, per_sample = step, "each", 1
    else:
        run, method = _launches(step, per_sample), "batch"
    trial = replace(budget, max_seconds=budget.max_seconds / TRIALS)
    samples = []
    for _ in range(TRIALS):
        samples += _sample(run, per_sample, clock, trial, MIN_SAMPLES // TRIALS)
    energy = None
    if meter is not None and budget.sustain_s > 0:
        each_run = sorted(samples)[len(samples) // 2] * per_sample
        energy = _sustain(run, per_sample, each_run, clock, meter, budget.sustain_s)
    return Timing(samples, method, per_sample, energy)


def _sample(run: Step, per_sample: int, clock: Clock, budget: Budget, at_least: int) -> list[float]:
    """Samples of `run` (per_sample iterations each), each between its own two marks.

    Samples are queued in rounds that double, with one sync a round, each behind an untimed
    run, so the device never waits for the host inside a round; the count is sized to cover
    budget.iterations, bounded by max_seconds once there are `at_least`.
    """
    wanted = max(at_least, math.ceil(budget.iterations / per_sample))
    samples: list[float] = []
    started = clock.now()
    round_size = 1
    while True:
        # An untimed run first keeps the device busy while the host queues the timed ones:
        # else the first sample of every round would hold a launch gap.
        run()
        marks = []
        for _ in range(round_size):
            begin = clock.mark()
            run()
            marks.append((begin, clock.mark()))
        clock.sync()
        samples += [clock.seconds(begin, end) / per_sample for begin, end in marks]
        elapsed = clock.now() - started
        if len(samples) >= wanted or (len(samples) >= at_least and elapsed >= budget.max_seconds):
            return samples
        per_round = elapsed / len(samples)
        fits = math.floor((budget.max_seconds - elapsed) / max(per_round, 1e-9))
        still = wanted - len(samples)
        round_size = max(1, min(2 * round_size, still, max(fits, at_least - len(samples))))


def _sustain(
    run: Step, per_sample: int, each_run: float, clock: Clock, meter: EnergyMeter, seconds: float
) -> Energy | None:
    """Run on, back to back, for `seconds` and on while the meter has no span to read. A sync
    every ~SUSTAIN_SYNC_S of queued work keeps the host from queueing far past the end, and
    marks how many iterations were done by when: the pace across the meter's span."""
    between_syncs = max(1, math.ceil(SUSTAIN_SYNC_S / max(each_run, 1e-9)))
    meter.start()
    done = [(clock.now(), 0)]  # the device is idle here: the samples ended with a sync
    window = None
    while window is None:
        for _ in range(between_syncs):
            run()
        clock.sync()
        now = clock.now()
        done.append((now, done[-1][1] + between_syncs * per_sample))
        elapsed = now - done[0][0]
        if elapsed >= seconds:
            last = elapsed >= max(seconds, SUSTAIN_LONGEST_S)
            window = meter.window(final=last)
            if last:
                break
    meter.stop()
    if window is None:
        return None
    begin, end, joules = window
    iterations = formulas.at(done, end) - formulas.at(done, begin)  # steady between syncs
    if iterations <= 0:
        return None
    return Energy(joules, end - begin, (end - begin) / iterations)
