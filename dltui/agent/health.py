"""The server's health as events: what each sample's health fields, throttle reasons and GPU
states say, turned into `event` frames when it changes (docs/health.md).

Two sorts. A *condition* is raised when it starts and resolved when it ends: a PCIe link
narrower than its slot (or at a lower generation under load), a page retirement or row
remapping waiting for a reset, a failed remapping, a hardware slowdown, thermal slowdown or
power brake, a GPU lost. A *count* that grows (PCIe replays, retired pages, remapped rows,
uncorrected ECC errors, NVLink errors) is one event saying by how much, at most one a minute
per GPU and field; its first reading is where counting starts. XIDs come from their own thread
(telemetry/xid.py). The agent's sampler thread calls `observe` with each sample.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from dltui.plans.topology import pcie_text
from dltui.protocol.inventory import GpuInfo, Inventory
from dltui.protocol.messages import Event, Sample, Severity

COUNT_INTERVAL_S = 60.0
"""At most one event a minute per GPU and count: a link replaying all the time is one line a
minute, its growth summed."""
RESOLVE_AFTER_S = 10.0
"""A throttle reason gone this long has ended: they come and go from tick to tick."""
BUSY_UTIL = 50.0
"""Above this GPU utilization a link below its top generation is degraded; an idle GPU
trains its link down to save power."""

# Throttle bit -> (kind, severity, words).
THROTTLES: dict[int, tuple[str, Severity, str]] = {
    0x8: ("hw_slowdown", "warning", "hardware slowdown: clocks cut by half or more"),
    0x20: ("sw_thermal", "warning", "software thermal slowdown: hotter than its target"),
    0x40: ("hw_thermal", "critical", "hardware thermal slowdown: too hot, clocks cut hard"),
    0x80: ("power_brake", "critical", "hardware power brake asserted: clocks cut hard"),
}
# Count field -> (kind, severity, words for its growth).
COUNTS: dict[str, tuple[str, Severity, str]] = {
    "pcie_replay": ("pcie_replay", "warning", "PCIe replays"),
    "ecc_uncorrected": ("ecc_uncorrected", "critical", "uncorrected ECC errors"),
    "retired_sbe": ("retired_pages", "warning", "pages retired for single-bit ECC errors"),
    "retired_dbe": ("retired_pages", "critical", "pages retired for double-bit ECC errors"),
    "remapped_correctable": ("remapped_rows", "info", "rows remapped (correctable errors)"),
    "remapped_uncorrectable": ("remapped_rows", "warning", "rows remapped (uncorrectable errors)"),
    "nvlink_crc_errors": ("nvlink_errors", "warning", "NVLink CRC errors"),
    "nvlink_replay_errors": ("nvlink_errors", "warning", "NVLink replays"),
    "nvlink_recovery_errors": ("nvlink_errors", "warning", "NVLink recoveries"),
}
# Flag field (1 while it holds) -> (kind, severity, words).
FLAGS: dict[str, tuple[str, Severity, str]] = {
    "retired_pending": ("retire_pending", "warning", "a page retirement waits for a GPU reset"),
    "remap_pending": ("remap_pending", "warning", "a row remapping waits for a GPU reset"),
    "remap_failed": ("remap_failed", "critical", "a row remapping failed: the GPU needs service"),
}
EVENT_KINDS = frozenset(
    {"xid", "pcie_link", "gpu_lost"}
    | {kind for kind, _, _ in (*THROTTLES.values(), *COUNTS.values(), *FLAGS.values())}
)
"""Every kind of health event (xid from telemetry/xid.py): what an `event KIND` rule names."""
_THROTTLE_BITS = sum(THROTTLES)
_READ_SLOWLY = ("pcie_gen", "pcie_width", *FLAGS, *COUNTS)
"""The fields the link, flags and counts are judged on: read every few seconds (they come in
each sample all the same), so most samples bring nothing new to judge."""


@dataclass
class _Count:
    base: float
    """The value the last event (or the first reading) left off at."""
    told: float | None = None
    """When the last event was."""


@dataclass
class _Gpu:
    info: GpuInfo | None
    raised: set[str] = field(default_factory=set)
    """Conditions up: kind (or flag field) names."""
    counts: dict[str, _Count] = field(default_factory=dict)
    throttle_seen: dict[int, float] = field(default_factory=dict)
    """Throttle bit -> when a sample last had it, while its condition is up."""
    lost: bool = False
    link_slow: bool = False
    """The link ran below its top generation when last seen under load."""
    judged: tuple[object, ...] | None = None
    """What the link, flags and counts were last judged on (see `_unchanged`)."""


class HealthCheck:
    """Per GPU, what the samples said last; `observe` says what changed."""

    def __init__(self, inventory: Inventory) -> None:
        self._gpus = {info.index: _Gpu(info) for info in inventory.gpus}

    def observe(self, sample: Sample) -> list[Event]:
        events: list[Event] = []
        for gpu_sample in sample.gpus:
            gpu = self._gpus.get(gpu_sample.index) or self._gpus.setdefault(
                gpu_sample.index, _Gpu(None)
            )
            index, wall = gpu_sample.index, sample.wall
            if gpu_sample.state == "lost":
                if not gpu.lost:
                    gpu.lost = True
                    events.append(Event(0, "gpu_lost", "critical",
                                        "the GPU fell off the bus or stopped answering NVML",
                                        wall, gpu=index, state="once"))  # fmt: skip
                continue
            values = gpu_sample.values
            mask = values.get("throttle")
            if mask is not None and (int(mask) & _THROTTLE_BITS or gpu.throttle_seen):
                events += self._throttle(gpu, index, int(mask), sample.mono, wall)
            if self._unchanged(gpu, values):
                continue
            events += self._link(gpu, index, values, wall)
            for name, (kind, severity, words) in FLAGS.items():
                if name in values:
                    events += _condition(gpu, name, kind, severity, words, values[name] >= 1,
                                         index, wall)  # fmt: skip
            for name, (kind, severity, words) in COUNTS.items():
                if name in values:
                    events += _count(gpu, name, kind, severity, words, values[name], index,
                                     sample.mono, wall)  # fmt: skip
        return events

    @staticmethod
    def _unchanged(gpu: _Gpu, values: dict[str, float]) -> bool:
        """Whether the link, flags and counts would be judged on what they were judged on last,
        with no count's growth waiting for its minute: then they say nothing new, and judging
        them again ten times a second would be the health check's largest cost."""
        judged = (values.get("util_gpu", 0.0) >= BUSY_UTIL, *map(values.get, _READ_SLOWLY))
        if judged == gpu.judged:
            return True
        waiting = any(values.get(name, count.base) > count.base
                      for name, count in gpu.counts.items())  # fmt: skip
        gpu.judged = None if waiting else judged
        return False

    def _link(self, gpu: _Gpu, index: int, values: dict[str, float], wall: float) -> list[Event]:
        info = gpu.info
        if info is None or "pcie_width" not in values or "pcie_gen" not in values:
            return []
        gen, width = int(values["pcie_gen"]), int(values["pcie_width"])
        narrow = width < (info.pcie_width_max or 0)
        if values.get("util_gpu", 0.0) >= BUSY_UTIL:  # the generation is judged under load only
            gpu.link_slow = gen < (info.pcie_gen_max or 0)
        if (narrow or gpu.link_slow) == ("pcie_link" in gpu.raised):
            return []  # unchanged: every tick, so no words made for nothing
        if narrow:
            now = dataclasses.replace(info, pcie_gen=gen, pcie_width=width)
            words = f"PCIe link trained at {pcie_text(now)}"
        else:
            words = f"PCIe link at gen{gen} under load (of gen{info.pcie_gen_max})"
        return _condition(gpu, "pcie_link", "pcie_link", "warning", words,
                          narrow or gpu.link_slow, index, wall, value=width)  # fmt: skip

    def _throttle(self, gpu: _Gpu, index: int, mask: int, mono: float, wall: float) -> list[Event]:
        events = []
        for bit, (kind, severity, words) in THROTTLES.items():
            if mask & bit:
                gpu.throttle_seen[bit] = mono
            since = gpu.throttle_seen.get(bit)
            on = since is not None and mono - since < RESOLVE_AFTER_S
            if not on:
                gpu.throttle_seen.pop(bit, None)
            events += _condition(gpu, kind, kind, severity, words, on, index, wall)
        return events


def _condition(
    gpu: _Gpu,
    key: str,
    kind: str,
    severity: Severity,
    words: str,
    on: bool,
    index: int,
    wall: float,
    value: float | None = None,
) -> list[Event]:
    """An event where the condition `key` starts or ends."""
    if on == (key in gpu.raised):
        return []
    if on:
        gpu.raised.add(key)
        return [Event(0, kind, severity, words, wall, gpu=index, value=value)]
    gpu.raised.discard(key)
    return [Event(0, kind, severity, f"ended: {words}", wall, gpu=index, state="resolved",
                  value=value)]  # fmt: skip


def _count(
    gpu: _Gpu,
    name: str,
    kind: str,
    severity: Severity,
    words: str,
    value: float,
    index: int,
    mono: float,
    wall: float,
) -> list[Event]:
    """An event where a count grew, at most one per COUNT_INTERVAL_S."""
    count = gpu.counts.get(name)
    if count is None or value < count.base:  # the first reading, or the driver reloaded
        gpu.counts[name] = _Count(value)
        return []
    grown = value - count.base
    if grown <= 0 or (count.told is not None and mono - count.told < COUNT_INTERVAL_S):
        return []
    count.base, count.told = value, mono
    return [Event(0, kind, severity, f"{grown:g} more {words} ({value:g} in all)", wall,
                  gpu=index, state="once", value=value)]  # fmt: skip
