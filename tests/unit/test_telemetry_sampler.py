"""The sampler's threads and schedule, slow-value merging, and the inventory it builds."""

from __future__ import annotations

import itertools
import logging
import os
import sys
import threading
import time
from collections.abc import Callable

import psutil

from dltui.protocol.inventory import GpuInfo, Inventory
from dltui.protocol.messages import Sample
from dltui.protocol.samples import GpuProcess, GpuSample
from dltui.telemetry.inventory import build_inventory, cpu_model, installed_frameworks
from dltui.telemetry.nvml_watch import CallWatch
from dltui.telemetry.sampler import SLOW_MAX_AGE, Sampler, fresh_slow, merged
from dltui.telemetry.schedule import Schedule
from tests.conftest import wait_for

TIMEOUT = 10.0


class Collector:
    """Collects samples and wakes the test once `done(samples)` holds."""

    def __init__(self, done) -> None:
        self.samples: list[Sample] = []
        self.done = done
        self.event = threading.Event()

    def __call__(self, sample: Sample) -> None:
        self.samples.append(sample)
        if self.done(self.samples):
            self.event.set()

    def wait(self) -> list[Sample]:
        assert self.event.wait(TIMEOUT), f"only {len(self.samples)} samples arrived"
        return list(self.samples)


class FakeReader:
    """The GpuReader interface of the gateway's one GPU: its slow reads are its gateway's."""

    index = 0

    def __init__(self, gateway: FakeGateway) -> None:
        self.gateway = gateway

    def wants(self, group: str) -> bool:
        return group in ("pcie", "processes")  # the PCIe call is due once a slow turn

    def read_slow(self, groups: object) -> dict[str, float]:
        return self.gateway.read_slow().get(0, {})

    def read_processes(self) -> list[GpuProcess] | None:
        return self.gateway.read_processes().get(0)


class FakeGateway:
    """The NvmlGateway interface with one GPU; read_slow can be held to play a 20 ms call."""

    def __init__(self) -> None:
        self.count = 1
        self.gpus = [GpuInfo(index=0, name="NVIDIA H200", uuid="GPU-0", memory_total=1 << 30)]
        self.error = None
        self.driver_version = "570.86.15"
        self.cuda_version = "12.8"
        self.slow_values = {0: {"pcie_rx": 55e9, "power": -1.0}}
        self.release_slow = threading.Event()
        self.release_slow.set()
        self.slow_reads = 0
        self.processes: dict[int, list[GpuProcess]] = {}
        self.closed = False
        self.watch = CallWatch()
        self.readers = [FakeReader(self)]

    def open(self) -> None:
        pass

    def read_fast(self, held: frozenset[str] = frozenset()) -> list[GpuSample]:
        return [GpuSample(index=0, state="ok", values={"power": 300.0})]

    def read_slow(self) -> dict[int, dict[str, float]]:
        self.release_slow.wait(TIMEOUT)
        self.slow_reads += 1
        return self.slow_values

    def read_processes(self) -> dict[int, list[GpuProcess]]:
        found, self.processes = self.processes, {}
        return found

    def opened(self, index: int) -> None:
        """No NVML handle: the topology reads nothing of NVML here."""
        return None

    def close(self) -> None:
        self.closed = True


def test_slow_values_are_merged_and_a_blocked_slow_read_never_delays_samples() -> None:
    gateway = FakeGateway()
    gateway.release_slow.clear()  # the slow thread is stuck in NVML
    collector = Collector(lambda s: len(s) >= 5)
    sampler = Sampler(50, collector, gateway=gateway)
    sampler.start()
    try:
        stuck = collector.wait()
        assert all("pcie_rx" not in s.gpus[0].values for s in stuck)
        collector.done = lambda s: "pcie_rx" in s[-1].gpus[0].values
        collector.event.clear()
        gateway.release_slow.set()
        merged = collector.wait()[-1].gpus[0]
    finally:
        sampler.stop()
    assert merged.values["pcie_rx"] == 55e9
    assert merged.values["power"] == 300.0  # the fast read wins
    assert gateway.closed


class ToldSchedule(Schedule):
    """The sampler's schedule, keeping what each slow turn was told of benchmark jobs."""

    def __init__(self) -> None:
        super().__init__()
        self.job_running: list[bool] = []

    def read_slow(self, readers, now: float, job_running: bool = False) -> dict:
        self.job_running.append(job_running)
        return super().read_slow(readers, now, job_running)


def test_the_slow_reads_are_told_whether_a_benchmark_job_runs() -> None:
    job = threading.Event()
    sampler = Sampler(50, lambda sample: None, gateway=FakeGateway(), job_running=job.is_set)
    told = sampler._schedule = ToldSchedule()
    sampler.start()
    try:
        wait_for(lambda: told.job_running, what="a slow read")
        job.set()
        wait_for(lambda: told.job_running[-1], what="a slow read during the job")
    finally:
        sampler.stop()
    assert told.job_running[0] is False


def test_the_slow_reads_follow_a_rate_change_at_once() -> None:
    """The fast thread wakes the slow one on the slow reads' interval, or each tick if rarer:
    raised from a tick every 5 s, the slow reads come again within seconds, not at 5 s."""
    gateway = FakeGateway()
    sampler = Sampler(0.2, lambda sample: None, gateway=gateway)
    sampler.start()
    try:
        wait_for(lambda: gateway.slow_reads >= 1, what="the first slow read")
        sampler.set_rate(20.0)
        began, reads = time.monotonic(), gateway.slow_reads
        wait_for(lambda: gateway.slow_reads >= reads + 3, what="slow reads at the new rate")
    finally:
        sampler.stop()
    assert time.monotonic() - began < 4.0  # at the change, then once an interval (1 s)


def test_gpu_processes_ride_once_on_the_sample_after_their_read_with_their_owners() -> None:
    gateway = FakeGateway()
    me = os.getpid()
    gateway.processes = {0: [GpuProcess(me, 2 << 30), GpuProcess(2**22 + 7)]}  # one is gone
    collector = Collector(lambda s: sum(g.processes is not None for x in s for g in x.gpus) == 1
                          and len(s) >= 10)  # fmt: skip
    sampler = Sampler(50, collector, gateway=gateway)
    sampler.start()
    try:
        samples = collector.wait()
    finally:
        sampler.stop()
    (listed,) = [gpu.processes for sample in samples for gpu in sample.gpus if gpu.processes]
    mine, gone = listed
    assert (mine.pid, mine.memory, mine.name) == (me, 2 << 30, psutil.Process(me).name())
    assert mine.user == psutil.Process(me).username() and mine.own  # the sampler's own process
    assert gone == GpuProcess(2**22 + 7)  # no such process here: no name, nothing invented


def test_a_failing_tick_is_logged_and_sampling_goes_on(caplog) -> None:
    def on_sample(sample: Sample) -> None:
        collector(sample)
        if sample.seq == 1:
            raise RuntimeError("the agent's queue is gone")

    collector = Collector(lambda s: len(s) >= 3)
    sampler = Sampler(50, on_sample, gateway=FakeGateway())
    with caplog.at_level(logging.ERROR, logger="dltui.telemetry.sampler"):
        sampler.start()
        try:
            samples = collector.wait()
        finally:
            sampler.stop()
    assert [s.seq for s in samples[:3]] == [1, 2, 3]
    assert any("the agent's queue is gone" in (r.exc_text or "") for r in caplog.records)


def sample_at_20_hz(on_sample: Callable[[Sample], None], collector: Collector) -> list[Sample]:
    """Run a 20 Hz sampler on a fake GPU until `collector` has what it waits for."""
    sampler = Sampler(20, on_sample, gateway=FakeGateway())
    sampler.start()
    try:
        return collector.wait()
    finally:
        sampler.stop()


def test_an_overrun_skips_missed_ticks_instead_of_bursting() -> None:
    period = 1 / 20

    def on_sample(sample: Sample) -> None:
        if sample.seq == 3:
            threading.Event().wait(8 * period)  # one tick overruns by ~7 periods
        collector(sample)

    collector = Collector(lambda s: len(s) >= 9)
    samples = sample_at_20_hz(on_sample, collector)
    gaps = [b.mono - a.mono for a, b in itertools.pairwise(samples[2:])]
    # One late tick right after the overrun at most, then back on the period: no burst of 7.
    assert sum(gap < period / 2 for gap in gaps) <= 1
    assert len(samples) == 9 and samples[-1].seq == 9


def test_ticks_stay_on_the_grid_when_each_tick_takes_time() -> None:
    def on_sample(sample: Sample) -> None:
        threading.Event().wait(0.01)  # a tick that costs a fifth of the period
        collector(sample)

    collector = Collector(lambda s: len(s) >= 21)
    samples = sample_at_20_hz(on_sample, collector)
    # Tick 20 is due one second after tick 0; sleeping a period after each tick would drift
    # by 20 × 10 ms.
    assert abs(samples[20].mono - samples[0].mono - 1.0) < 0.05


def test_stop_is_prompt_even_between_slow_ticks() -> None:
    collector = Collector(lambda s: len(s) >= 1)
    sampler = Sampler(0.2, collector, gateway=FakeGateway())  # a tick every 5 s
    sampler.start()
    collector.wait()
    began = time.monotonic()
    sampler.stop()
    assert time.monotonic() - began < 1.0


def test_slow_values_stale_are_dropped_and_lost_gpus_get_none() -> None:
    now = 100.0
    gpus = [
        GpuSample(index=0, state="ok", values={"power": 300.0}),
        GpuSample(index=1, state="lost", values={}),
    ]
    slow = {
        0: {"pcie_tx": (1e9, now - 0.2), "sm_active": (90.0, now - SLOW_MAX_AGE - 0.1)},
        1: {"pcie_tx": (2e9, now)},
    }
    fresh, stale_at = fresh_slow(slow, now)
    assert stale_at == now - 0.2 + SLOW_MAX_AGE  # when pcie_tx goes stale: merged again then
    first, second = (merged(gpu, fresh.get(gpu.index), None, None) for gpu in gpus)
    assert first.values == {"power": 300.0, "pcie_tx": 1e9}
    assert second.values == {}
    assert merged(gpus[1], None, None, None) is gpus[1]  # nothing to add: the same sample


def test_the_rate_follows_set_rate_at_once_and_on_a_new_grid() -> None:
    collector = Collector(lambda s: len(s) >= 3)
    sampler = Sampler(100, collector, gateway=FakeGateway())
    sampler.set_rate(1.0)  # before the start: the first tick is at once anyway
    sampler.start()
    try:
        collector.wait()  # ~2 s at 1 Hz
        slow = list(collector.samples)
        collector.done = lambda s: len(s) >= len(slow) + 20
        collector.event.clear()
        sampler.set_rate(50.0)
        fast = collector.wait()[len(slow) :]
    finally:
        sampler.stop()
    assert 1.6 < slow[2].mono - slow[0].mono < 2.6
    assert fast[0].mono - slow[-1].mono < 0.5  # at once, not at the old grid's next tick
    assert fast[19].mono - fast[0].mono < 1.0


# --- inventory --------------------------------------------------------------------------------


def test_inventory_from_the_gateway() -> None:
    inventory = build_inventory(FakeGateway())
    assert isinstance(inventory, Inventory)
    assert [gpu.name for gpu in inventory.gpus] == ["NVIDIA H200"]
    assert (inventory.driver_version, inventory.cuda_version) == ("570.86.15", "12.8")
    assert inventory.nvml_error is None
    assert inventory.cpu_count >= 1 and inventory.memory_total > 0
    assert inventory.cpu_model and inventory.hostname and inventory.os
    assert inventory.python == ".".join(map(str, sys.version_info[:3]))
    assert inventory.dltui


def test_frameworks_found_without_importing_them() -> None:
    installed = {"tensorflow-cpu": "2.16.1", "torch": "2.5.0"}
    assert installed_frameworks(installed) == {"tensorflow": "2.16.1", "torch": "2.5.0"}
    installed.clear()
    assert installed_frameworks(installed) == {}
    before = set(sys.modules)
    build_inventory(FakeGateway())
    assert not {"tensorflow", "torch"} & (set(sys.modules) - before)


def test_cpu_model_from_cpuinfo(tmp_path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: AMD EPYC 9654 96-Core Processor\n")
    assert cpu_model(str(cpuinfo)) == "AMD EPYC 9654 96-Core Processor"
    cpuinfo.write_text("processor\t: 0\nBogoMIPS\t: 2000.00\n")  # ARM: no model name
    assert cpu_model(str(cpuinfo))
    assert cpu_model(str(tmp_path / "absent"))
