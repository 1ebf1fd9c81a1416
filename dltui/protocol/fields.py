"""Every telemetry field, defined once: its name in `values` maps, unit, label, Prometheus name
and kind, how a chart scales it, what the help screen says of it, and whether a health summary
shows it.

The agent writes these names; everything else derives from the specs: the Prometheus names of
`/metrics` and the OpenMetrics export (metric_names.py), the TUI's charts, their full scales and
its help, `health_fields()`, and how a value is written for people (formatting, from the unit).
Adding a field is one entry here plus the NVML read that fills it (telemetry/nvml_reads.py).
Derived views read these tables when asked, never a copy taken at import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["gauge", "counter"]
Combine = Literal["mean", "sum", "max"]


@dataclass(frozen=True, slots=True)
class ChartSpec:
    """How the TUI charts a field."""

    label: str
    """A chart's title and the help screen's term: 'util', 'pci tx'."""
    top: float | str | None = None
    """The full scale: a number, the field whose latest value it is ('power_limit'), 'pcie' or
    'nvlink' for what the GPU's links carry; None: a round number above what it reached."""
    floor: float = 0.0
    """The least full scale where there is no physical one (a quiet link is not magnified)."""
    combine: Combine = "mean"
    """How a server's GPUs make one figure: a mean, a sum or the highest."""
    total: bool = True
    """Whether it is among a server's totals (below the compact table, the overlay)."""


@dataclass(frozen=True, slots=True)
class FieldSpec:
    name: str
    unit: str
    """'%', 'B', 'B/s', 'W', 'J', '°C', 'MHz' or '' (a count): formatting writes it from this."""
    label: str
    """What it is in a few words: probe's lines and Prometheus's HELP."""
    metric: str | None = None
    """Its Prometheus name between `dltui_gpu_` (or `_host_`) and the unit; None: not exported
    as a number (the throttle bitmask is one point per reason)."""
    kind: Kind = "gauge"
    """'counter' for a count since driver load, which only grows."""
    chart: ChartSpec | None = None
    help: str = ""
    """What the chart shows, for the help screen (charted fields)."""
    health: bool = False
    """Whether a health summary (probe, the detail screen, the report) shows it."""
    window: float = 0.0
    """Seconds each reading averages over: a benchmark case shorter than this has no reading
    of its own (its figure would be the case before's), so it shows none."""


def _table(*specs: FieldSpec) -> dict[str, FieldSpec]:
    return {spec.name: spec for spec in specs}


UTIL_WINDOW = 0.2
"""Seconds NVML's utilization averages over: 1/6 s to 1 s by product, 200 ms on the H200."""
GPM_WINDOW = 1.0
"""Seconds between two readings of GPM metrics and link counters (telemetry/nvml_reads.py):
each reading is the mean over that span."""
RATE_FLOOR = 1e8
"""B/s: below 100 MB/s a link or a disk is idle for deep learning; do not magnify the noise
(a quiet disk's few KB/s of logs would otherwise fill its chart)."""

GPU_FIELDS = _table(
    FieldSpec("util_gpu", "%", "GPU utilization", "utilization",
              chart=ChartSpec("util", 100.0),
              help="time a kernel was running (not how much of the GPU it used)",
              window=UTIL_WINDOW),
    FieldSpec("util_mem", "%", "memory-controller utilization", "memory_utilization"),
    FieldSpec("mem_used", "B", "memory used", "memory_used",
              chart=ChartSpec("mem", "mem_total", combine="sum"),
              help="memory used, against the GPU's memory"),
    FieldSpec("mem_total", "B", "memory total", "memory_total"),
    FieldSpec("power", "W", "power draw", "power",
              chart=ChartSpec("power", "power_limit", combine="sum"),
              help="draw, against the power limit"),
    FieldSpec("power_limit", "W", "power limit", "power_limit"),
    FieldSpec("energy", "J", "energy since driver load", "energy", "counter"),
    FieldSpec("temp", "°C", "GPU temperature", "temperature",
              chart=ChartSpec("temp", floor=100.0, combine="max", total=False),
              help="GPU temperature, against 100 °C (GPUs slow down below it)"),
    FieldSpec("clock_sm", "MHz", "SM clock", "sm_clock",
              chart=ChartSpec("sm clk", "clock_sm_max", floor=2000.0, total=False),
              help="SM clock, against the GPU's maximum (2 GHz where the agent does not say)"),
    FieldSpec("clock_mem", "MHz", "memory clock", "memory_clock"),
    FieldSpec("clock_sm_max", "MHz", "maximum SM clock", "sm_clock_max"),
    FieldSpec("throttle", "", "clock throttle reasons (NVML bitmask)"),
    FieldSpec("ecc_corrected", "", "corrected ECC errors since driver load",
              "ecc_corrected_errors", "counter"),
    FieldSpec("ecc_uncorrected", "", "uncorrected ECC errors since driver load",
              "ecc_uncorrected_errors", "counter", health=True),
    FieldSpec("tensor_active", "%", "tensor core active (GPM)", "tensor_active",
              chart=ChartSpec("tensor", 100.0),
              help="tensor cores active (GPM, Hopper and later)", window=GPM_WINDOW),
    FieldSpec("sm_active", "%", "SM active (GPM)", "sm_active", window=GPM_WINDOW),
    FieldSpec("sm_occupancy", "%", "SM occupancy (GPM)", "sm_occupancy", window=GPM_WINDOW),
    FieldSpec("dram_active", "%", "DRAM bandwidth used (GPM)", "dram_active", window=GPM_WINDOW),
    FieldSpec("pcie_tx", "B/s", "PCIe transmit", "pcie_transmit",
              chart=ChartSpec("pci tx", "pcie", RATE_FLOOR, "sum"),
              help="PCIe transmit, against what the link carries each way", window=GPM_WINDOW),
    FieldSpec("pcie_rx", "B/s", "PCIe receive", "pcie_receive",
              chart=ChartSpec("pci rx", "pcie", RATE_FLOOR, "sum"),
              help="PCIe receive, against what the link carries each way", window=GPM_WINDOW),
    FieldSpec("nvlink_tx", "B/s", "NVLink transmit", "nvlink_transmit",
              chart=ChartSpec("nvl tx", "nvlink", RATE_FLOOR, "sum"),
              help="NVLink transmit, against all active links together", window=GPM_WINDOW),
    FieldSpec("nvlink_rx", "B/s", "NVLink receive", "nvlink_receive",
              chart=ChartSpec("nvl rx", "nvlink", RATE_FLOOR, "sum"),
              help="NVLink receive, against all active links together", window=GPM_WINDOW),
    FieldSpec("nvlink_tx_bytes", "B", "NVLink bytes sent since driver load",
              "nvlink_transmitted", "counter"),
    FieldSpec("nvlink_rx_bytes", "B", "NVLink bytes received since driver load",
              "nvlink_received", "counter"),
    # Health, read every 5 s (docs/health.md): the agent raises events when they change.
    # Lifetime counts are counters; flags and the link as it is now, gauges.
    FieldSpec("pcie_gen", "", "PCIe link generation now", "pcie_link_generation", health=True),
    FieldSpec("pcie_width", "", "PCIe link width now (lanes)", "pcie_link_width", health=True),
    FieldSpec("pcie_replay", "", "PCIe replays since driver load", "pcie_replays", "counter",
              health=True),
    FieldSpec("retired_sbe", "", "pages retired for repeated single-bit ECC errors",
              "retired_pages_single_bit", "counter", health=True),
    FieldSpec("retired_dbe", "", "pages retired for double-bit ECC errors",
              "retired_pages_double_bit", "counter", health=True),
    FieldSpec("retired_pending", "", "a page retirement waits for a GPU reset (1) or not (0)",
              "retired_pages_pending", health=True),
    FieldSpec("remapped_correctable", "", "memory rows remapped for correctable errors",
              "remapped_rows_correctable", "counter", health=True),
    FieldSpec("remapped_uncorrectable", "", "memory rows remapped for uncorrectable errors",
              "remapped_rows_uncorrectable", "counter", health=True),
    FieldSpec("remap_pending", "", "a row remapping waits for a GPU reset (1) or not (0)",
              "remap_pending", health=True),
    FieldSpec("remap_failed", "", "a row remapping failed (1) or not (0)", "remap_failed",
              health=True),
    FieldSpec("nvlink_crc_errors", "", "NVLink CRC errors (flit and data), all links",
              "nvlink_crc_errors", "counter", health=True),
    FieldSpec("nvlink_replay_errors", "", "NVLink replays, all links", "nvlink_replay_errors",
              "counter", health=True),
    FieldSpec("nvlink_recovery_errors", "", "NVLink recoveries, all links",
              "nvlink_recovery_errors", "counter", health=True),
)  # fmt: skip

HOST_FIELDS = _table(
    FieldSpec("cpu", "%", "CPU, all cores", "cpu_utilization", chart=ChartSpec("cpu", 100.0),
              help="all cores, one block per core under it"),
    FieldSpec("load1", "", "load average, 1 min", "load1"),
    FieldSpec("load5", "", "load average, 5 min", "load5"),
    FieldSpec("load15", "", "load average, 15 min", "load15"),
    FieldSpec("mem_used", "B", "memory used", "memory_used",
              chart=ChartSpec("mem", "mem_total"),
              help="memory used, against the host's (the line under the cores: 1 min load)"),
    FieldSpec("mem_total", "B", "memory total", "memory_total"),
    FieldSpec("net_rx", "B/s", "network receive", "network_receive",
              chart=ChartSpec("net ↓", floor=RATE_FLOOR), help="network receive, all NICs"),
    FieldSpec("net_tx", "B/s", "network transmit", "network_transmit",
              chart=ChartSpec("net ↑", floor=RATE_FLOOR), help="network transmit, all NICs"),
    FieldSpec("disk_read", "B/s", "disk read", "disk_read",
              chart=ChartSpec("disk r", floor=RATE_FLOOR), help="read from every disk"),
    FieldSpec("disk_write", "B/s", "disk write", "disk_write",
              chart=ChartSpec("disk w", floor=RATE_FLOOR), help="written to every disk"),
)  # fmt: skip


def health_fields() -> tuple[str, ...]:
    """The GPU fields a health summary shows (with the throttle reasons), in table order."""
    return tuple(name for name, spec in GPU_FIELDS.items() if spec.health)


# NVML clock-throttle reason bits (nvmlClocksEventReasons), explained in words for the UI.
THROTTLE_REASONS = {
    0x1: "idle",
    0x2: "application clock setting",
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x10: "sync boost",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake",
    0x100: "display clock setting",
}


def throttle_reasons_in(mask: int) -> list[str]:
    """The reasons set in an NVML throttle bitmask, in words."""
    return [words for bit, words in THROTTLE_REASONS.items() if mask & bit]
