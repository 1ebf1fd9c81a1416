"""The names of telemetry fields, their units and labels: the vocabulary of `values` maps.

The agent writes these names, the fleet stores series under them and the UI labels them from
here, so a field is defined once.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FieldSpec:
    name: str
    unit: str
    label: str


def _table(*specs: FieldSpec) -> dict[str, FieldSpec]:
    return {spec.name: spec for spec in specs}


GPU_FIELDS = _table(
    FieldSpec("util_gpu", "%", "GPU utilization"),
    FieldSpec("util_mem", "%", "memory-controller utilization"),
    FieldSpec("mem_used", "B", "memory used"),
    FieldSpec("mem_total", "B", "memory total"),
    FieldSpec("power", "W", "power draw"),
    FieldSpec("power_limit", "W", "power limit"),
    FieldSpec("energy", "J", "energy since driver load"),
    FieldSpec("temp", "°C", "GPU temperature"),
    FieldSpec("clock_sm", "MHz", "SM clock"),
    FieldSpec("clock_mem", "MHz", "memory clock"),
    FieldSpec("clock_sm_max", "MHz", "maximum SM clock"),
    FieldSpec("throttle", "", "clock throttle reasons (NVML bitmask)"),
    FieldSpec("ecc_corrected", "", "corrected ECC errors since driver load"),
    FieldSpec("ecc_uncorrected", "", "uncorrected ECC errors since driver load"),
    FieldSpec("nvlink_tx", "B/s", "NVLink transmit"),
    FieldSpec("nvlink_rx", "B/s", "NVLink receive"),
    FieldSpec("nvlink_tx_bytes", "B", "NVLink bytes sent since driver load"),
    FieldSpec("nvlink_rx_bytes", "B", "NVLink bytes received since driver load"),
    FieldSpec("pcie_tx", "B/s", "PCIe transmit"),
    FieldSpec("pcie_rx", "B/s", "PCIe receive"),
    FieldSpec("sm_active", "%", "SM active (GPM)"),
    FieldSpec("sm_occupancy", "%", "SM occupancy (GPM)"),
    FieldSpec("tensor_active", "%", "tensor core active (GPM)"),
    FieldSpec("dram_active", "%", "DRAM bandwidth used (GPM)"),
    # Health, read every 5 s (docs/health.md): the agent raises events when they change.
    FieldSpec("pcie_gen", "", "PCIe link generation now"),
    FieldSpec("pcie_width", "", "PCIe link width now (lanes)"),
    FieldSpec("pcie_replay", "", "PCIe replays since driver load"),
    FieldSpec("retired_sbe", "", "pages retired for repeated single-bit ECC errors"),
    FieldSpec("retired_dbe", "", "pages retired for double-bit ECC errors"),
    FieldSpec("retired_pending", "", "a page retirement waits for a GPU reset (1) or not (0)"),
    FieldSpec("remapped_correctable", "", "memory rows remapped for correctable errors"),
    FieldSpec("remapped_uncorrectable", "", "memory rows remapped for uncorrectable errors"),
    FieldSpec("remap_pending", "", "a row remapping waits for a GPU reset (1) or not (0)"),
    FieldSpec("remap_failed", "", "a row remapping failed (1) or not (0)"),
    FieldSpec("nvlink_crc_errors", "", "NVLink CRC errors (flit and data), all links"),
    FieldSpec("nvlink_replay_errors", "", "NVLink replays, all links"),
    FieldSpec("nvlink_recovery_errors", "", "NVLink recoveries, all links"),
)

HEALTH_FIELDS = ("pcie_gen", "pcie_width", "pcie_replay", "retired_sbe", "retired_dbe",
                 "retired_pending", "remapped_correctable", "remapped_uncorrectable",
                 "remap_pending", "remap_failed", "nvlink_crc_errors", "nvlink_replay_errors",
                 "nvlink_recovery_errors", "ecc_uncorrected")  # fmt: skip
"""The GPU fields a health summary shows (with the throttle reasons)."""

HOST_FIELDS = _table(
    FieldSpec("cpu", "%", "CPU, all cores"),
    FieldSpec("load1", "", "load average, 1 min"),
    FieldSpec("load5", "", "load average, 5 min"),
    FieldSpec("load15", "", "load average, 15 min"),
    FieldSpec("mem_used", "B", "memory used"),
    FieldSpec("mem_total", "B", "memory total"),
    FieldSpec("net_rx", "B/s", "network receive"),
    FieldSpec("net_tx", "B/s", "network transmit"),
    FieldSpec("disk_read", "B/s", "disk read"),
    FieldSpec("disk_write", "B/s", "disk write"),
)

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


def throttle_words(mask: int) -> list[str]:
    """The reasons set in an NVML throttle bitmask, in words."""
    return [words for bit, words in THROTTLE_REASONS.items() if mask & bit]
