"""The gateway's health reads (nvml_reads.HEALTH_GROUPS), every 5 s: the PCIe link as it is
now, retired pages, remapped rows and the NVLink error counters.

Each reader takes the gateway's `call` (which raises NVML's own errors, so that a read a GPU
lacks is found unsupported once and never asked again), the pynvml module for its constants,
the GPU's handle and its active NVLink links. docs/health.md says what each field means.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dltui.telemetry.nvml_reads import VALUE_MEMBERS

Call = Callable[..., Any]
HealthReader = Callable[[Call, Any, Any], dict[str, float]]

RETIRED_SINGLE_BIT, RETIRED_DOUBLE_BIT = 0, 1  # nvml.h's nvmlPageRetirementCause_t
# NVLink error counters summed over all lanes: field id constant -> our field.
NVLINK_ERROR_FIELDS = {
    "NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": "nvlink_crc_errors",
    "NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": "nvlink_crc_errors",
    "NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL": "nvlink_replay_errors",
    "NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL": "nvlink_recovery_errors",
}


def pcie_link(call: Call, nvml: Any, handle: Any) -> dict[str, float]:
    """The link's generation and width now; an idle GPU may run at a lower generation."""
    return {
        "pcie_gen": call("nvmlDeviceGetCurrPcieLinkGeneration", handle),
        "pcie_width": call("nvmlDeviceGetCurrPcieLinkWidth", handle),
    }


def retired_pages(call: Call, nvml: Any, handle: Any) -> dict[str, float]:
    """Page retirement (GPUs before Ampere; later ones remap rows and answer NotSupported)."""
    single = call("nvmlDeviceGetRetiredPages", handle, RETIRED_SINGLE_BIT)
    double = call("nvmlDeviceGetRetiredPages", handle, RETIRED_DOUBLE_BIT)
    pending = call("nvmlDeviceGetRetiredPagesPendingStatus", handle)
    return {"retired_sbe": len(single), "retired_dbe": len(double),
            "retired_pending": float(bool(pending))}  # fmt: skip


def remapped_rows(call: Call, nvml: Any, handle: Any) -> dict[str, float]:
    """Row remapping (Ampere and later): rows replaced, and whether one waits for a reset."""
    correctable, uncorrectable, pending, failed = call("nvmlDeviceGetRemappedRows", handle)
    return {"remapped_correctable": correctable, "remapped_uncorrectable": uncorrectable,
            "remap_pending": float(bool(pending)), "remap_failed": float(bool(failed))}  # fmt: skip


def nvlink_errors(call: Call, nvml: Any, handle: Any) -> dict[str, float]:
    """The NVLink error counters over all links, in one field-values call; a counter the
    driver does not give is left out, and none at all is NotSupported."""
    known = [(getattr(nvml, name), field) for name, field in NVLINK_ERROR_FIELDS.items()
             if hasattr(nvml, name)]  # fmt: skip
    if not known:  # an nvidia-ml-py older than these counters
        raise nvml.NVMLError_NotSupported()
    entries = call("nvmlDeviceGetFieldValues", handle, [field_id for field_id, _ in known])
    values: dict[str, float] = {}
    for entry, (_, field) in zip(entries, known, strict=True):
        if entry.nvmlReturn == 0:
            values[field] = values.get(field, 0.0) + _counter(entry)
    if not values:
        raise nvml.NVMLError_NotSupported()
    return values


def _counter(entry: Any) -> int:
    value: int = getattr(entry.value, VALUE_MEMBERS[entry.valueType])
    return value


HEALTH_READERS: dict[str, HealthReader] = {
    "pcie_link": pcie_link,
    "retired_pages": retired_pages,
    "remapped_rows": remapped_rows,
    "nvlink_errors": nvlink_errors,
}
