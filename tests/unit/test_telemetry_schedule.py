"""The sampler's schedule on a fake clock: which reads each tick and each slow turn make."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import pytest

from dltui.protocol.samples import GpuProcess, MigSample
from dltui.telemetry.nvml_reads import (
    FAST_INTERVALS,
    FAST_READS,
    GPM_MIN_INTERVAL,
    HEALTH_INTERVAL,
    JOB_INTERVALS,
    SLOW_GROUPS,
    SLOW_INTERVALS,
)
from dltui.telemetry.schedule import Schedule
from tests.fakes.nvml import FakeGpu, FakeNvml, NVMLError_NotSupported, NVMLError_Unknown
from tests.fakes.scheduled import ScheduledGateway

TICK = 0.1
"""The agent's fastest rate, 10 Hz."""


class Reader:
    """A GPU's reader that can be asked everything (or `wanted`), and notes what it was asked."""

    def __init__(self, index: int, wanted: Iterable[str] | None = None) -> None:
        self.index = index
        self.wanted = set(wanted) if wanted is not None else None
        self.asked: list[str] = []

    def wants(self, group: str) -> bool:
        return self.wanted is None or group in self.wanted

    def read_slow(self, groups: Iterable[str]) -> dict[str, float]:
        groups = list(groups)
        self.asked += groups
        return dict.fromkeys(groups, 1.0)

    def read_processes(self) -> list[GpuProcess]:
        self.asked.append("processes")
        return []

    def read_instances(self) -> list[MigSample]:
        self.asked.append("mig")
        return []


def slow_turns(
    schedule: Schedule,
    readers: list[Reader],
    seconds: float,
    job_running: bool = False,
    start: float = 1000.0,
) -> Counter[str]:
    """Slow turns as the sampler takes them at 10 Hz, for `seconds` from `start`: how often
    each group was asked of the first GPU."""
    every = schedule.slow_every(TICK)
    for turn in range(round(seconds / every)):
        now = start + turn * every
        schedule.read_slow(readers, now, job_running)  # type: ignore[arg-type]
        schedule.read_processes(readers, now)  # type: ignore[arg-type]
        schedule.read_instances(readers, now)  # type: ignore[arg-type]
    return Counter(readers[0].asked)


def test_cheap_reads_every_tick_and_the_slowly_refreshed_ones_at_their_interval() -> None:
    schedule = Schedule()
    ticks = 50
    read = Counter[str]()
    for tick in range(ticks):
        held = schedule.held(1000.0 + tick * TICK)
        read.update(group for group in FAST_READS if group not in held)
    assert FAST_INTERVALS == {"util": 0.2, "memory": 0.5}
    assert read == {"util": 25, "memory": 10, "power": 50, "temp": 50, "clock_sm": 50,
                    "throttle": 50}  # fmt: skip


def test_cheap_reads_at_a_slower_rate_are_read_every_tick() -> None:
    schedule = Schedule()
    assert all(not schedule.held(1000.0 + tick * 1.0) for tick in range(5))  # 1 Hz


def test_slow_reads_every_nth_turn_each_at_its_period() -> None:
    schedule = Schedule()
    assert schedule.slow_every(TICK) == 1.0  # a slow turn every 10th tick at 10 Hz
    asked = slow_turns(schedule, [Reader(0)], seconds=60.0)
    assert asked["gpm"] == asked["nvlink"] == asked["pcie"] == 60  # every turn (1 s)
    assert asked["pcie_link"] == asked["power_limit"] == 60 / HEALTH_INTERVAL  # every 5th
    assert asked["processes"] == asked["mig"] == 30  # every 2nd
    # Every 29th: a read comes due once its period less the slack (SLACK, 28.5 s) has passed,
    # a turn early rather than a turn late.
    assert asked["energy"] == asked["pcie_replay"] == asked["clock_sm_max"] == 3  # 0, 29, 58 s
    assert set(asked) == {"gpm", "processes", "mig", *SLOW_GROUPS}


def test_the_energy_counter_every_5_s_while_a_job_runs() -> None:
    assert (SLOW_INTERVALS["energy"], JOB_INTERVALS["energy"]) == (30.0, 5.0)
    schedule = Schedule()
    idle = slow_turns(schedule, [Reader(0)], seconds=29.0)
    busy = slow_turns(schedule, [Reader(0)], seconds=30.0, job_running=True, start=1029.0)
    assert idle["energy"] == 1  # at 0 s
    assert busy["energy"] == 6  # at 29, 34, 39, 44, 49 and 54 s
    assert busy["gpm"] == 30 and busy["processes"] == 15  # the rest as before


def test_gpm_first_for_every_gpu_then_each_gpus_other_reads() -> None:
    first, second = Reader(0), Reader(1)
    Schedule().read_slow([first, second], 1000.0)  # type: ignore[list-item]
    assert first.asked[0] == second.asked[0] == "gpm"
    assert first.asked[1:] == second.asked[1:] == list(SLOW_GROUPS)


def test_a_read_a_gpu_cannot_make_is_not_due_until_it_can() -> None:
    """A GPU whose GPM stops giving PCIe rates reads the PCIe call on that turn, not a period
    later; a GPU that cannot be asked (hung, lost) is not counted as read."""
    schedule = Schedule()
    reader = Reader(0, wanted={"energy"})
    schedule.read_slow([reader], 1000.0)  # type: ignore[list-item]
    reader.wanted = {"energy", "pcie"}
    schedule.read_slow([reader], 1000.5)  # type: ignore[list-item]
    assert reader.asked == ["energy", "pcie"]


def test_slow_turns_follow_the_sampling_rate_when_it_is_rarer() -> None:
    schedule = Schedule()
    assert schedule.slow_every(5.0) == 5.0  # nothing is read more often than samples are taken
    assert Schedule(slow={"gpm": 0.01}).slow_every(0.01) == pytest.approx(GPM_MIN_INTERVAL * 1.05)


def test_two_gpm_samples_never_closer_than_nvmls_minimum() -> None:
    schedule = Schedule(slow={"gpm": 0.01}, job={"gpm": 0.01})
    due = [schedule.due(0, "gpm", 1000.0 + step * 0.02) for step in range(50)]  # 1 s of 20 ms
    assert sum(due) == 10  # every 100 ms


def test_a_slow_read_that_keeps_failing_is_asked_again_at_its_period_not_backed_off() -> None:
    """No back-off: an error lasts its read only, and the read is asked again when next due
    (a GPU that stays unreachable for long is lost or hung, and then not asked at all). Only
    NotSupported stops a read, for good."""
    gpu = FakeGpu(faults={"nvmlDeviceGetTotalEnergyConsumption": NVMLError_Unknown(),
                          "nvmlDeviceGetEnforcedPowerLimit": NVMLError_NotSupported()})  # fmt: skip
    nvml = FakeNvml([gpu])
    gateway = ScheduledGateway(nvml, nvml.clock)
    gateway.open()
    for _ in range(91):  # 90 s of slow turns, one a second
        values = gateway.read_slow().get(0, {})
        assert "energy" not in values and "power_limit" not in values
        nvml.clock.now += 1.0
    assert gpu.calls["nvmlDeviceGetTotalEnergyConsumption"] == 4  # at 0, 29, 58 and 87 s
    assert gpu.calls["nvmlDeviceGetEnforcedPowerLimit"] == 1
    assert gateway.errors["nvmlDeviceGetTotalEnergyConsumption"] == 4
    gateway.close()


def test_a_cheap_read_that_failed_is_read_again_on_the_next_tick() -> None:
    gpu = FakeGpu(util=(10, 1))
    nvml = FakeNvml([gpu])
    gateway = ScheduledGateway(nvml, nvml.clock)
    gateway.open()
    gpu.faults["nvmlDeviceGetUtilizationRates"] = NVMLError_Unknown()
    for _ in range(4):  # failing: asked every tick, though it is due every other one
        (sample,) = gateway.read_fast()
        assert "util_gpu" not in sample.values
        nvml.clock.now += TICK
    gpu.faults.clear()
    for _ in range(4):  # answering: every other tick again, the ticks between carry it
        (sample,) = gateway.read_fast()
        assert sample.values["util_gpu"] == 10
        nvml.clock.now += TICK
    assert gpu.calls["nvmlDeviceGetUtilizationRates"] == 4 + 2
    gateway.close()
