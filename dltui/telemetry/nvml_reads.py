"""What the agent reads from NVML, in which units, and how often: the gateway's tables.

Kept apart from the gateway (nvml.py) so that the choice of fields and cadences, which were
measured on the H200 machines (docs/results/telemetry-h200.md), reads in one place. The
sampler's schedule (schedule.py) is what follows the cadences.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dltui.protocol.fields import GPM_WINDOW

GPM_MIN_INTERVAL = 0.1
"""Seconds between two GPM samples; NVML's metrics are noise over shorter spans."""

ALL_LINKS = 0xFFFFFFFF
"""scopeId UINT_MAX: nvml.h defines it as the NVLink throughput counter summed over all links."""

KIB = 1024  # NVLink throughput field counters count KiB
KB = 1000  # nvmlDeviceGetPcieThroughput answers KB/s
# GPM PCIe/NVLink rates: pynvml's comments say MiB/s, but against copies of known size on the
# H200 they read as MB/s (DESIGN.md, "What the hardware here exposes").
MB = 1_000_000

# field -> (pynvml metric constant, factor to the unit in protocol.fields)
GPM_METRICS: dict[str, tuple[str, float]] = {
    "sm_active": ("NVML_GPM_METRIC_SM_UTIL", 1.0),
    "sm_occupancy": ("NVML_GPM_METRIC_SM_OCCUPANCY", 1.0),
    "tensor_active": ("NVML_GPM_METRIC_ANY_TENSOR_UTIL", 1.0),
    "dram_active": ("NVML_GPM_METRIC_DRAM_BW_UTIL", 1.0),
    "pcie_tx": ("NVML_GPM_METRIC_PCIE_TX_PER_SEC", MB),
    "pcie_rx": ("NVML_GPM_METRIC_PCIE_RX_PER_SEC", MB),
    "nvlink_tx": ("NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC", MB),
    "nvlink_rx": ("NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC", MB),
}

# Reads of one number, taken on the slow thread: field -> (NVML function, pynvml constants
# passed after the handle, divisor to the unit in protocol.fields). The energy counter takes
# milliseconds a call; the others change too slowly to be worth a VM exit ten times a second.
SIMPLE_READS: dict[str, tuple[str, tuple[str, ...], int]] = {
    "power_limit": ("nvmlDeviceGetEnforcedPowerLimit", (), 1000),  # mW
    "energy": ("nvmlDeviceGetTotalEnergyConsumption", (), 1000),  # mJ
    "clock_mem": ("nvmlDeviceGetClockInfo", ("NVML_CLOCK_MEM",), 1),
    "clock_sm_max": ("nvmlDeviceGetMaxClockInfo", ("NVML_CLOCK_SM",), 1),
    "ecc_corrected": (
        "nvmlDeviceGetTotalEccErrors",
        ("NVML_MEMORY_ERROR_TYPE_CORRECTED", "NVML_VOLATILE_ECC"),
        1,
    ),
    "ecc_uncorrected": (
        "nvmlDeviceGetTotalEccErrors",
        ("NVML_MEMORY_ERROR_TYPE_UNCORRECTED", "NVML_VOLATILE_ECC"),
        1,
    ),
    "pcie_replay": ("nvmlDeviceGetPcieReplayCounter", (), 1),
}

# The health reads (nvml_health.py): group -> the fields it fills. They change rarely and
# matter when they do; the agent turns their changes into events (agent/health.py).
HEALTH_GROUPS: dict[str, tuple[str, ...]] = {
    "pcie_link": ("pcie_gen", "pcie_width"),
    "retired_pages": ("retired_sbe", "retired_dbe", "retired_pending"),
    "remapped_rows": ("remapped_correctable", "remapped_uncorrectable", "remap_pending",
                      "remap_failed"),
    "nvlink_errors": ("nvlink_crc_errors", "nvlink_replay_errors", "nvlink_recovery_errors"),
}  # fmt: skip
HEALTH_INTERVAL = 5.0
"""Seconds between health reads (microseconds each)."""

# How often each slow read is taken, in seconds. The energy counter, the NVLink field counters
# and a GPM sample cost milliseconds or hundreds of µs a call (docs/results/telemetry-h200.md):
# at 10 Hz they alone would take percents of a core per GPU. Cumulative counters lose nothing by
# being read less often, and GPM averages over the interval anyway: once a second, as `dcgmi
# dmon` samples by default. The energy counter and the PCIe replay counter are read every 30 s,
# as often as dcgm-exporter collects by default; the energy counter every 5 s while a benchmark
# job runs (JOB_INTERVALS).
SLOW_INTERVALS = {
    "processes": 2.0,
    # what a reading averages over: a benchmark case shorter than it shows none of these
    **dict.fromkeys(("gpm", "nvlink", "pcie"), GPM_WINDOW),
    "energy": 30.0,
    # Set by an administrator, the board or a fault: as often as the health reads.
    **dict.fromkeys(
        ("power_limit", "clock_mem", "ecc_corrected", "ecc_uncorrected"), HEALTH_INTERVAL
    ),
    "clock_sm_max": 30.0,  # fixed by the board: the charts' full scale for the SM clock
    **dict.fromkeys(HEALTH_GROUPS, HEALTH_INTERVAL),
    "pcie_replay": 30.0,
    "mig": 2.0,
}
# While a benchmark job runs: a report takes a case's power from the energy counter where it
# moved twice inside the case (recording/report.py), so it is read more often then.
JOB_INTERVALS = SLOW_INTERVALS | {"energy": 5.0}
SLOW_GROUPS = ("nvlink", "pcie", *SIMPLE_READS, *HEALTH_GROUPS)
"""The slow reads but GPM (which a slow turn takes first, for every GPU), in the order a GPU
makes them."""

# The compute processes on a GPU (pid, memory), read on the slow thread: a list, not a number.
PROCESS_READ = "nvmlDeviceGetComputeRunningProcesses"
# Each process's SM and memory utilization since a timestamp, read with the list.
PROCESS_UTIL_READ = "nvmlDeviceGetProcessUtilization"
NO_INSTANCE = 0xFFFFFFFF
"""A process's gpuInstanceId outside MIG mode."""


class Utilization(ctypes.Structure):
    """nvmlUtilization_t (nvml.h)."""

    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class Memory(ctypes.Structure):
    """nvmlMemory_t (nvml.h)."""

    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]  # fmt: skip


@dataclass(frozen=True)
class FastRead:
    """One cheap read a tick makes (nvml_fast.py prepares it for each GPU)."""

    functions: tuple[str, ...]
    """The NVML functions that can answer it, best first."""
    constants: tuple[str, ...]
    """pynvml constants passed after the handle."""
    answer: type
    """What the C function writes its answer into."""
    fields: tuple[str, ...]
    values: Callable[[Any], tuple[float, ...]]
    """The fields' values, in protocol.fields' units, from the answer (a number's value)."""


# Every cheap read: group (support detected once) -> its read.
FAST_READS: dict[str, FastRead] = {
    "util": FastRead(("nvmlDeviceGetUtilizationRates",), (), Utilization,
                     ("util_gpu", "util_mem"), lambda util: (util.gpu, util.memory)),
    "memory": FastRead(("nvmlDeviceGetMemoryInfo",), (), Memory, ("mem_used", "mem_total"),
                       lambda memory: (memory.used, memory.total)),
    "power": FastRead(("nvmlDeviceGetPowerUsage",), (), ctypes.c_uint, ("power",),
                      lambda milliwatts: (milliwatts / 1000,)),
    "temp": FastRead(("nvmlDeviceGetTemperature",), ("NVML_TEMPERATURE_GPU",), ctypes.c_uint,
                     ("temp",), lambda celsius: (celsius,)),
    "clock_sm": FastRead(("nvmlDeviceGetClockInfo",), ("NVML_CLOCK_SM",), ctypes.c_uint,
                         ("clock_sm",), lambda mhz: (mhz,)),
    # Older drivers and nvidia-ml-py releases only have the deprecated name.
    "throttle": FastRead(("nvmlDeviceGetCurrentClocksEventReasons",
                          "nvmlDeviceGetCurrentClocksThrottleReasons"), (), ctypes.c_ulonglong,
                         ("throttle",), lambda mask: (mask,)),
}  # fmt: skip

# Fast reads whose source refreshes more slowly than a 10 Hz tick: group -> seconds between
# reads; the ticks in between carry the value read last. Utilization changes at its source every
# 200 ms, as the driver spaces its own samples; power, temperature and the SM clock every 100 ms,
# memory and throttle reasons as soon as they move (benchmarks/nvml_refresh.py; the figures in
# docs/results/telemetry-h200.md). Memory is read twice a second all the same, as often as the
# TUI draws: it is the dearest fast read, and the framebuffer in use moves only when a process
# allocates or frees (PyTorch's caching allocator keeps what it reserved).
FAST_INTERVALS: dict[str, float] = {"util": 0.2, "memory": 0.5}

# c_nvmlValue_t member for each NVML_VALUE_TYPE_* (0..6).
VALUE_MEMBERS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")

INIT_REASONS = {
    "NVMLError_LibraryNotFound": "NVML library not found: no NVIDIA driver on this machine",
    "NVMLError_DriverNotLoaded": "NVIDIA driver not loaded: NVML cannot reach any GPU",
    "NVMLError_NoPermission": "no permission to use NVML",
    "NVMLError_LibRmVersionMismatch": (
        "NVML library and kernel driver versions differ: reload the driver or reboot"
    ),
}
