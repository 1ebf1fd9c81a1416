"""What is due when: the one place that says which reads a tick, or a slow turn, makes.

The periods are nvml_reads' tables, measured on the H200 machines: a cheap read every tick, or
as often as its source refreshes (FAST_INTERVALS: the ticks between carry its last values); GPM,
the NVLink and PCIe rates, the energy counter, the health reads, the process lists and the MIG
instances each at their own period (SLOW_INTERVALS; JOB_INTERVALS while a benchmark job runs)
on the slow thread, GPM first for every GPU so that its spacing stays steady. A GPU's reader
reads what it is asked and says what it can be asked (`GpuReader.wants`: supported, neither lost
nor hung); the gateway keeps the policy for each call. A read that fails is not backed off: it
is asked again when next due (a cheap read, the next tick), and never again once NVML says it
is not supported.

The schedule is the sampler's, and runs on its threads: the fast state on the fast thread, the
slow state on the slow one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from dltui.protocol.samples import GpuProcess, MigSample
from dltui.telemetry.gpu_reader import GpuReader, Values
from dltui.telemetry.nvml_reads import (
    FAST_INTERVALS,
    GPM_MIN_INTERVAL,
    JOB_INTERVALS,
    SLOW_GROUPS,
    SLOW_INTERVALS,
)

SLACK = 0.95
"""A read is due once this share of its period has passed, so that a thread ticking at exactly
the period never skips a turn."""

T = TypeVar("T")


class Schedule:
    """Which reads are due now, and when each was last due."""

    def __init__(
        self,
        fast: Mapping[str, float] = FAST_INTERVALS,
        slow: Mapping[str, float] = SLOW_INTERVALS,
        job: Mapping[str, float] = JOB_INTERVALS,
    ) -> None:
        self._fast = [(group, SLACK * period) for group, period in fast.items() if period > 0]
        """The cheap reads not read every tick, and their periods less the slack."""
        self._slow_min = min(slow.values())
        self._slow = _floored(slow)
        self._job = _floored(job)
        self._fast_last: dict[str, float] = {}
        """Cheap read group -> when it was last due (for every GPU at once: one tick reads all)."""
        self._last: dict[tuple[int, str], float] = {}
        """(GPU index, group) -> when that slow read was last due (the clock of `now`)."""

    # --- the fast tick -----------------------------------------------------------------------

    def held(self, now: float) -> frozenset[str]:
        """The cheap reads not due this tick: their source has nothing newer yet, so each GPU
        carries the values it last read (a GPU with none reads it all the same)."""
        held = []
        for group, period in self._fast:
            last = self._fast_last.get(group)
            if last is not None and now - last < period:
                held.append(group)
            else:
                self._fast_last[group] = now
        return frozenset(held)

    # --- the slow turn -----------------------------------------------------------------------

    def slow_every(self, period: float) -> float:
        """How often the slow thread's turn comes when samples are taken every `period`: as
        often as its most frequent read is due, or as samples are taken, if that is rarer."""
        return max(self._slow_min, GPM_MIN_INTERVAL * 1.05, period)

    def due(self, index: int, group: str, now: float, job_running: bool = False) -> bool:
        """Whether the slow read `group` of GPU `index` is due at `now` (then it is due no more
        until its period has passed again)."""
        periods = self._job if job_running else self._slow
        key = (index, group)
        last = self._last.get(key)
        if last is not None and now - last < periods.get(group, 0.0):
            return False
        self._last[key] = now
        return True

    def read_slow(
        self, readers: Sequence[GpuReader], now: float, job_running: bool = False
    ) -> dict[int, Values]:
        """GPM, the NVLink and PCIe rates, the energy counter and the health reads of each GPU
        that wants them and where they are due: GPU index -> values; a GPU with nothing new
        this time is absent."""
        out: dict[int, Values] = {}
        for reader in readers:  # GPM first, for every GPU: its spacing stays steady
            if reader.wants("gpm") and self.due(reader.index, "gpm", now, job_running):
                _into(out, reader.index, reader.read_slow(("gpm",)))
        for reader in readers:
            index = reader.index
            due = [group for group in SLOW_GROUPS
                   if reader.wants(group) and self.due(index, group, now, job_running)]  # fmt: skip
            if due:
                _into(out, index, reader.read_slow(due))
        return out

    def read_processes(
        self, readers: Sequence[GpuReader], now: float
    ) -> dict[int, list[GpuProcess]]:
        """The compute processes on each GPU where their list is due. A GPU that was not due,
        or whose read failed, is absent."""
        return self._read_due(readers, "processes", now, lambda reader: reader.read_processes())

    def read_instances(
        self, readers: Sequence[GpuReader], now: float
    ) -> dict[int, list[MigSample]]:
        """Each MIG instance's readings, for the GPUs in MIG mode where they are due."""
        return self._read_due(readers, "mig", now, lambda reader: reader.read_instances())

    def _read_due(
        self,
        readers: Sequence[GpuReader],
        group: str,
        now: float,
        read: Callable[[GpuReader], list[T] | None],
    ) -> dict[int, list[T]]:
        out: dict[int, list[T]] = {}
        for reader in readers:
            if reader.wants(group) and self.due(reader.index, group, now):
                found = read(reader)
                if found is not None:
                    out[reader.index] = found
        return out


def _floored(periods: Mapping[str, float]) -> dict[str, float]:
    """The periods less the slack; two GPM samples never closer than NVML's minimum."""
    slacked = {group: SLACK * period for group, period in periods.items()}
    slacked["gpm"] = max(slacked.get("gpm", 0.0), GPM_MIN_INTERVAL)
    return slacked


def _into(out: dict[int, Values], index: int, values: Values) -> None:
    if values:
        out.setdefault(index, {}).update(values)
