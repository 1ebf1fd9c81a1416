"""The energy a kernel drew, read by the worker from the GPU's own counter while it runs.

A per-watt figure divides a rate by power. Power sampled at 10 Hz around a 59 ms case read 108 W
on an H200 near idle and gave 6.8 TFLOP/s/W (the GPU peaks near 1.4): the samples missed the
case. The energy counter covers the work itself, but on the H200 it moves only every 100 ms
(benchmarks/energy_counter.py), so two reads at arbitrary times are off by up to a step: 20%
over 0.25 s. The meter polls it on a thread of its own (a read takes ~3.5 ms) and keeps the
moments it moved: joules between two of them, over the time between them, are right to a
read's length. NVML is reached through the one gateway.

Which span: at its power limit an H100 does not settle. From idle it holds ~780 W for
~0.8 s, then swings between ~510 and ~790 W about once a second, its pace with it
(docs/results/energy-window-h100.txt), so a fixed window reads a phase: 0.93 TFLOP/s/W from the
high one where whole swings give ~0.98. An H200 from idle draws past its limit for a moment
and then holds at it. `power_window` reads whole swings where the power swings, and the
longest stretch up to the end where it holds; at the limit it waits long enough for a
controller to have started swinging before it trusts a power that holds.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Sequence

from dltui.plans import formulas
from dltui.telemetry.nvml import NvmlGateway

Update = tuple[float, float]
"""(host seconds on time.perf_counter, joules): a moment the counter moved, and to what."""

Reading = tuple[float, float, float]
"""(from, to, watts): the power between two updates READING_S or more apart."""


READING_S = 0.5
"""Each reading of the power spans this much at the least: the counter moves every ~100 ms and
the meter may see a move late (one ~20 ms late in an H100's trace), so a reading over one
interval would swing by itself."""
BAND = 0.05
"""The power holds while every reading is within this share of its mean (a move seen 20 ms
late moves a reading by 4%), and swings where it goes past it both ways (the H100's ±21%
reads as ±14% over READING_S)."""
AT_LIMIT = 0.95
"""A GPU whose power reached this share of its enforced limit is at the limit."""
HOLD_S = 0.4
"""A power that holds is read over this long at the least: four of the counter's moves."""
HOLD_AT_LIMIT_S = 1.5
"""At the limit, a power that holds is trusted only over this long: the H100's controller
started swinging after 0.8 s from idle."""
SWINGS = 2
"""Whole swings to read where the power swings."""


def power_window(
    updates: Sequence[Update], limit_w: float | None, final: bool = False
) -> tuple[float, float] | None:
    """The span (host seconds) to read the energy across, or None to run on (with `final`: the
    best there is, None only where the counter did not move twice)."""
    if len(updates) < 2:
        return None
    (t0, e0), (t1, e1) = updates[0], updates[-1]
    mean = (e1 - e0) / (t1 - t0)
    readings = _readings(updates)
    rises = _rises(readings, mean)
    if len(rises) > SWINGS or (final and len(rises) > 1):
        return rises[0], rises[-1]
    highest = max([mean, *(power for _, _, power in readings)])
    at_limit = limit_w is not None and highest >= AT_LIMIT * limit_w
    held = _held(updates, readings, HOLD_AT_LIMIT_S if at_limit else HOLD_S)
    return held if held is not None or not final else (t0, t1)


def read_window(
    updates: Sequence[Update], limit_w: float | None, final: bool = False
) -> tuple[float, float, float] | None:
    """(begin, end, joules): the span `power_window` chose, and the counter's joules across
    it (between its updates where an end falls between them)."""
    span = power_window(updates, limit_w, final)
    if span is None:
        return None
    begin, end = span
    return begin, end, formulas.at(updates, end) - formulas.at(updates, begin)


def _held(
    updates: Sequence[Update], readings: list[Reading], at_least: float
) -> tuple[float, float] | None:
    """The longest span up to the last update, `at_least` long, over which the power held
    within the band of its mean: a first overshoot from idle, before the controller pulls the
    clocks down, is left out."""
    t1, e1 = updates[-1]
    for t0, e0 in updates[:-1]:
        if t1 - t0 < at_least:
            return None  # later starts are shorter still
        mean = (e1 - e0) / (t1 - t0)
        inside = [power for start, _, power in readings if start >= t0]
        if all(abs(power - mean) <= BAND * mean for power in inside):
            return t0, t1
    return None


def _readings(updates: Sequence[Update]) -> list[Reading]:
    """At each update, the power since the last update READING_S or more before it."""
    readings = []
    start = 0
    for k in range(1, len(updates)):
        while updates[k][0] - updates[start + 1][0] >= READING_S:
            start += 1
        (ta, ea), (tb, eb) = updates[start], updates[k]
        if tb - ta >= READING_S:
            readings.append((ta, tb, (eb - ea) / (tb - ta)))
    return readings


def _rises(readings: list[Reading], mean: float) -> list[float]:
    """When the power crossed `mean` going up on its way past the band above it, after it had
    fallen below the band from above it: once a swing, each at the same phase of it (the
    readings' lag is the same at every one). A ramp from idle up to the first high is no
    swing."""
    rises = []
    was_high = low = False
    crossed = 0.0
    for (_, ta, a), (_, tb, b) in itertools.pairwise(readings):
        if a <= mean < b:
            crossed = ta + (tb - ta) * (mean - a) / (b - a)
        if b > (1 + BAND) * mean:
            if low:
                rises.append(crossed)  # set since: it fell below the mean, and it is past it
            was_high, low = True, False
        elif b < (1 - BAND) * mean and was_high:
            low = True
    return rises


class GpuEnergyMeter:
    def __init__(self, gateway: NvmlGateway, index: int, limit_w: float | None) -> None:
        self._gateway = gateway
        self._index = index
        self.limit_w = limit_w
        """The GPU's enforced power limit, where NVML gives it."""
        self._updates: list[Update] = []
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._updates = []
        self._stopping.clear()
        self._thread = threading.Thread(target=self._poll, name="energy meter", daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        last: float | None = None
        while not self._stopping.is_set():
            joules = self._gateway.energy_joules(self._index)
            if joules is None:
                return
            if last is not None and joules != last:
                self._updates.append((time.perf_counter(), joules))
            last = joules

    def window(self, final: bool = False) -> tuple[float, float, float] | None:
        return read_window(self.updates(), self.limit_w, final)

    def updates(self) -> list[Update]:
        """The counter's moves seen since `start`."""
        return list(self._updates)  # the poll thread appends as this reads

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()


def open_meter(uuid: str) -> GpuEnergyMeter | None:
    """A meter on the GPU with this UUID (the only GPU, where the framework gives none), or
    None where NVML cannot read its energy."""
    gateway = NvmlGateway()
    gateway.open()
    index = gateway.index_of(uuid)
    if index is None and gateway.count == 1:
        index = 0
    if index is None or gateway.energy_joules(index) is None:
        gateway.close()
        return None
    limit = gateway.readers[index].read_slow(["power_limit"]).get("power_limit")
    return GpuEnergyMeter(gateway, index, limit)
