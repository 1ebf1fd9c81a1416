"""Host telemetry: CPU, load, memory, network and disk rates.

Read on every tick, so it must stay cheap. Everything is read every `counter_interval` (1 s)
and repeated in between: the kernel counts CPU time in 10 ms jiffies, so a 100 ms CPU share
moves in steps of 10% per core (a second is both finer and ten times cheaper; htop's default is
1.5 s), and it updates load averages every 5 s. On Linux every figure comes from /proc files
opened once and read again from their start (`pread`): on a small VM opening a /proc file costs
as much as reading it, and psutil's per-core percentages, disk totals and network counters cost
more than the parsing below (docs/results/telemetry-h200.md). Elsewhere psutil does it all.
Rates are counter differences over monotonic time (rates.py), never blocking intervals.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import psutil

from dltui.protocol.samples import HostSample
from dltui.telemetry.rates import CounterRates

_SECTOR = 512  # /proc/diskstats counts 512-byte sectors whatever the device's sector size
# Layers over other disks, or memory: counting them would count the same bytes twice.
_VIRTUAL_DISKS = ("loop", "ram", "zram", "dm-", "md", "nbd")


class ProcFile:
    """A /proc file kept open and read again from its start: one system call a read."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None
        self._size = 1 << 14

    def read(self) -> bytes | None:
        """The file's whole content now; None where it cannot be read (not Linux)."""
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            while len(data := os.pread(self._fd, self._size, 0)) == self._size:
                self._size *= 2  # filled the buffer: there may be more
        except OSError:
            return None
        return data

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class HostSampler:
    """Reads one `HostSample`; CPU use and rates cover the time since the previous read."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, counter_interval: float = 1.0
    ) -> None:
        self._clock = clock
        self.counter_interval = counter_interval
        self._stat = ProcFile("/proc/stat")
        self._loadavg = ProcFile("/proc/loadavg")
        self._meminfo = ProcFile("/proc/meminfo")
        self._net = ProcFile("/proc/net/dev")
        self._diskstats = ProcFile("/proc/diskstats")
        self._rates = CounterRates()
        self._read_at: float | None = None
        """When the counters were last read."""
        self._previous_cpu = _cpu_times(self._stat.read())
        self._whole_disks: dict[str, bool] = {}
        self._last: HostSample | None = None
        if self._previous_cpu is None:  # not Linux: psutil's "since the last call", primed
            psutil.cpu_percent(interval=None, percpu=True)

    def read(self) -> HostSample:
        """The host now: read every `counter_interval`, the last reading repeated in between
        (samples are whole on their own)."""
        now = self._clock()
        due = self._read_at is None or now - self._read_at >= self.counter_interval
        if self._last is None or due:
            self._read_at = now
            values: dict[str, float] = {}
            per_core = self._cpu(values)
            values["load1"], values["load5"], values["load15"] = self._load()
            values.update(self._read_slower(now))
            self._last = HostSample(values=values, cpu_per_core=per_core)
        return self._last

    def close(self) -> None:
        for proc in (self._stat, self._loadavg, self._meminfo, self._net, self._diskstats):
            proc.close()

    def _read_slower(self, now: float) -> dict[str, float]:
        """Memory, and network and disk rates since the previous such read."""
        values: dict[str, float] = {}
        total, available = self._memory()
        values["mem_total"] = total
        values["mem_used"] = total - available
        values.update(self._rates.update(now, self._counters()))
        return values

    def _cpu(self, values: dict[str, float]) -> list[float]:
        """Fills values["cpu"]; returns the per-core percentages."""
        times = _cpu_times(self._stat.read())
        if times is None or self._previous_cpu is None:
            per_core: list[float] = psutil.cpu_percent(interval=None, percpu=True)
            values["cpu"] = sum(per_core) / len(per_core) if per_core else 0.0
            return per_core
        previous, self._previous_cpu = self._previous_cpu, times
        percents = [
            _busy_percent(before, after) for before, after in zip(previous, times, strict=False)
        ]
        values["cpu"] = percents[0]
        return percents[1:]

    def _load(self) -> tuple[float, float, float]:
        text = self._loadavg.read()
        if text is None:
            return os.getloadavg()
        one, five, fifteen = text.split(maxsplit=3)[:3]
        return float(one), float(five), float(fifteen)

    def _memory(self) -> tuple[int, int]:
        """Total and available memory, bytes."""
        text = self._meminfo.read()
        found = _meminfo(text) if text is not None else None
        if found is None:
            memory = psutil.virtual_memory()
            return memory.total, memory.available
        return found

    def _counters(self) -> dict[str, int]:
        text = self._net.read()
        counters = net_totals(text) if text is not None else _psutil_net_totals()
        disks = self._disk_bytes()
        if disks is not None:
            counters["disk_read"], counters["disk_write"] = disks
        return counters

    def _disk_bytes(self) -> tuple[int, int] | None:
        """Bytes read and written, summed over whole physical disks (no partitions)."""
        text = self._diskstats.read()
        if text is None:
            disks = psutil.disk_io_counters()
            return None if disks is None else (disks.read_bytes, disks.write_bytes)
        read = written = 0
        for line in text.splitlines():
            fields = line.split()
            if len(fields) < 10 or not self._is_whole_disk(fields[2].decode()):
                continue
            read += int(fields[5]) * _SECTOR
            written += int(fields[9]) * _SECTOR
        return read, written

    def _is_whole_disk(self, name: str) -> bool:
        known = self._whole_disks.get(name)
        if known is None:
            # /sys/block lists disks, not partitions; asked once per name.
            known = not name.startswith(_VIRTUAL_DISKS) and os.path.exists(f"/sys/block/{name}")
            self._whole_disks[name] = known
        return known


def _cpu_times(stat: bytes | None) -> list[tuple[int, int]] | None:
    """(busy, total) jiffies for all CPUs, then each core, from /proc/stat; None if not Linux."""
    if stat is None:
        return None
    times = []
    for line in stat.splitlines():
        if not line.startswith(b"cpu"):
            break
        # user nice system idle iowait irq softirq steal (guest time is inside user and nice)
        ticks = [int(tick) for tick in line.split()[1:9]]
        total = sum(ticks)
        times.append((total - ticks[3] - ticks[4], total))
    return times


def _busy_percent(before: tuple[int, int], after: tuple[int, int]) -> float:
    elapsed = after[1] - before[1]
    if elapsed <= 0:
        return 0.0
    return min(100.0, max(0.0, 100.0 * (after[0] - before[0]) / elapsed))


def _meminfo(text: bytes) -> tuple[int, int] | None:
    """MemTotal and MemAvailable from /proc/meminfo, bytes; None if either is missing."""
    found: dict[bytes, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(b":")
        if key in (b"MemTotal", b"MemAvailable"):
            found[key] = int(rest.split()[0]) * 1024  # kB
            if len(found) == 2:
                return found[b"MemTotal"], found[b"MemAvailable"]
    return None


def _is_loopback(name: str) -> bool:
    return name.rstrip("0123456789") == "lo"


def net_totals(proc_net_dev: bytes) -> dict[str, int]:
    """Cumulative network bytes from /proc/net/dev, without loopback: local traffic is not the
    network."""
    received = sent = 0
    for line in proc_net_dev.splitlines()[2:]:  # two header lines
        name, _, counts = line.partition(b":")
        if not counts or _is_loopback(name.strip().decode()):
            continue
        fields = counts.split()
        received += int(fields[0])
        sent += int(fields[8])
    return {"net_rx": received, "net_tx": sent}


def _psutil_net_totals() -> dict[str, int]:
    nics = psutil.net_io_counters(pernic=True)
    if not nics:
        return {}
    real = [nic for name, nic in nics.items() if not _is_loopback(name)]
    return {
        "net_rx": sum(nic.bytes_recv for nic in real),
        "net_tx": sum(nic.bytes_sent for nic in real),
    }
