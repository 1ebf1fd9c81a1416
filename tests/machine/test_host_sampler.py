"""The host sampler on this machine: its real /proc, its CPUs under load, the cost of a read."""

from __future__ import annotations

import os
import statistics
import time

import psutil

from dltui.protocol.fields import HOST_FIELDS
from dltui.telemetry.host import HostSampler

RATES = ("net_rx", "net_tx", "disk_read", "disk_write")


def test_read_on_this_machine() -> None:
    sampler = HostSampler(counter_interval=0.0)
    sample = sampler.read()
    values = sample.values
    assert set(values) <= set(HOST_FIELDS)
    for name in ("cpu", "load1", "load5", "load15", "mem_used", "mem_total"):
        assert name in values
    assert 0 <= values["cpu"] <= 100
    assert 0 < values["mem_used"] <= values["mem_total"] == psutil.virtual_memory().total
    assert len(sample.cpu_per_core) == psutil.cpu_count()
    assert all(0 <= core <= 100 for core in sample.cpu_per_core)
    # First read: no rates yet, rather than a made-up zero.
    assert not set(RATES) & set(values)
    second = sampler.read().values
    assert all(second[name] >= 0 for name in RATES if name in second)
    assert "net_rx" in second or not psutil.net_io_counters(pernic=True)


def test_proc_files_are_opened_once(monkeypatch) -> None:
    sampler = HostSampler(counter_interval=0.0)
    sampler.read()
    opened = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda *args: opened.append(args[0]) or real_open(*args))
    for _ in range(3):
        assert sampler.read().values["mem_total"] == psutil.virtual_memory().total
    assert opened == []
    sampler.close()


def test_cpu_use_follows_a_busy_core() -> None:
    sampler = HostSampler(counter_interval=0.2)
    sampler.read()
    began = time.perf_counter()
    while time.perf_counter() - began < 0.3:  # keep one core busy
        pass
    sample = sampler.read()
    cores = psutil.cpu_count()
    assert sample.values["cpu"] >= 0.5 * 100 / cores
    assert max(sample.cpu_per_core) >= 50


def test_a_read_is_cheap() -> None:
    sampler = HostSampler(counter_interval=0.0)
    timings = []
    for _ in range(200):
        began = time.perf_counter()
        sampler.read()
        timings.append(time.perf_counter() - began)
    median = statistics.median(timings)
    # Aim: < 300 µs (about 190 µs on the dev VM); the bound catches a blocking call.
    assert median < 0.002, f"median read {median * 1e6:.0f} µs"
