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
    FieldSpec("pcie_tx", "B/s", "PCIe transmit"),
    FieldSpec("pcie_rx", "B/s", "PCIe receive"),
    FieldSpec("sm_active", "%", "SM active (GPM)"),
    FieldSpec("sm_occupancy", "%", "SM occupancy (GPM)"),
    FieldSpec("tensor_active", "%", "tensor core active (GPM)"),
    FieldSpec("dram_active", "%", "DRAM bandwidth used (GPM)"),
)

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
