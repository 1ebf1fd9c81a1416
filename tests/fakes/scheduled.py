"""The NVML gateway read as the sampler reads it: each read when the sampler's schedule says it
is due, at the time of a clock the test moves (the fake NVML's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dltui.protocol.samples import GpuProcess, GpuSample, MigSample
from dltui.telemetry.nvml import NvmlGateway
from dltui.telemetry.schedule import Schedule


class ScheduledGateway(NvmlGateway):
    """A gateway with the sampler's `Schedule` in front of its readers."""

    def __init__(self, nvml: Any, clock: Callable[[], float]) -> None:
        super().__init__(nvml)
        self.clock = clock
        self.schedule = Schedule()

    def read_fast(self, held: frozenset[str] | None = None) -> list[GpuSample]:
        """A tick: the cheap reads due now; the others carry their last values."""
        return super().read_fast(self.schedule.held(self.clock()) if held is None else held)

    def read_slow(self, job_running: bool = False) -> dict[int, dict[str, float]]:
        return self.schedule.read_slow(self.readers, self.clock(), job_running)

    def read_processes(self) -> dict[int, list[GpuProcess]]:
        return self.schedule.read_processes(self.readers, self.clock())

    def read_instances(self) -> dict[int, list[MigSample]]:
        return self.schedule.read_instances(self.readers, self.clock())
