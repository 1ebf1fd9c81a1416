"""The host sampler: rates from counter differences, loopback, disks (on this machine's real
/proc and clock: tests/machine)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import psutil
import pytest

from dltui.telemetry import host
from dltui.telemetry.host import HostSampler

RATES = ("net_rx", "net_tx", "disk_read", "disk_write")


class FakeClock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def test_rates_are_counter_differences_over_monotonic_time(monkeypatch) -> None:
    counters = {"net_rx": 1000, "net_tx": 0, "disk_read": 5_000, "disk_write": 0}
    clock = FakeClock()
    sampler = HostSampler(clock=clock)
    monkeypatch.setattr(sampler, "_counters", lambda: dict(counters))
    sampler.read()
    counters.update(net_rx=3000, net_tx=500, disk_read=4_000, disk_write=1_000_000)
    clock.now += 0.5 * sampler.counter_interval  # not yet due: the same sample again
    assert "net_rx" not in sampler.read().values
    clock.now += 0.5 * sampler.counter_interval
    values = sampler.read().values
    assert values["net_rx"] == pytest.approx(2000 / sampler.counter_interval)
    assert values["net_tx"] == pytest.approx(500 / sampler.counter_interval)
    assert values["disk_write"] == pytest.approx(1_000_000 / sampler.counter_interval)
    assert "disk_read" not in values  # went backwards: no rate rather than a negative one


def test_memory_and_counters_are_read_at_their_own_slower_interval(monkeypatch) -> None:
    clock = FakeClock()
    sampler = HostSampler(clock=clock, counter_interval=0.5)
    reads = []
    monkeypatch.setattr(sampler, "_counters", lambda: reads.append(clock.now) or {"net_rx": 0})
    samples = []
    for _ in range(10):  # one second at 10 Hz
        samples.append(sampler.read())
        assert {"cpu", "load1", "mem_used"} <= set(samples[-1].values)  # the values repeat
        clock.now += 0.1
    assert len(reads) == 2  # at 0 s and at 0.5 s
    assert len({id(sample) for sample in samples}) == 2  # CPU too: a 0.1 s share is jiffy noise


PROC_NET_DEV = b"""\
Inter-|   Receive                                  |  Transmit
 face |bytes    packets errs drop fifo frame compr multi|bytes    packets errs drop fifo colls
    lo: 1000000000000 5 0 0 0 0 0 0 1000000000000 5 0 0 0 0 0 0
  eth0:     100      2    0    0    0     0     0     0      200       3    0    0    0     0 0 0
   ib0:       1      1    0    0    0     0     0     0        2       1    0    0    0     0 0 0
"""


def test_loopback_traffic_is_not_network_traffic(monkeypatch) -> None:
    counters = host.net_totals(PROC_NET_DEV)
    assert (counters["net_rx"], counters["net_tx"]) == (101, 202)
    nic = SimpleNamespace
    monkeypatch.setattr(psutil, "net_io_counters", lambda pernic: {  # not Linux: psutil's
        "lo": nic(bytes_recv=10**12, bytes_sent=10**12),
        "eth0": nic(bytes_recv=100, bytes_sent=200),
    })  # fmt: skip
    assert host._psutil_net_totals() == {"net_rx": 100, "net_tx": 200}


def test_busy_percent_is_clamped_and_safe() -> None:
    assert host._busy_percent((0, 100), (50, 200)) == 50.0
    assert host._busy_percent((0, 100), (0, 100)) == 0.0  # no time passed
    assert host._busy_percent((10, 100), (5, 200)) == 0.0


def test_disks_are_whole_physical_disks_only() -> None:
    sampler = HostSampler()
    assert not sampler._is_whole_disk("loop0")
    assert not sampler._is_whole_disk("zram0")
    assert not sampler._is_whole_disk("no-such-disk")
    blocks = os.listdir("/sys/block") if os.path.isdir("/sys/block") else []
    physical = [name for name in blocks if not name.startswith(host._VIRTUAL_DISKS)]
    for name in physical:
        assert sampler._is_whole_disk(name)
    if physical:
        # Partitions are not in /sys/block: vda1 is inside vda.
        assert not sampler._is_whole_disk(physical[0] + "p99")
