"""MIG: the instances of a GPU in MIG mode, read once for the inventory, and each instance's
memory every 2 s (the gateway adds its GPM metrics, `nvmlGpmMigSampleGet`, where NVML gives
them).

Written from NVML's documented calls (nvmlDeviceGetMigMode, nvmlDeviceGetMaxMigDeviceCount,
nvmlDeviceGetMigDeviceHandleByIndex, nvmlDeviceGetGpuInstanceId, …) and tested against the fake
NVML that follows them: no GPU here could be put in MIG mode (docs/health.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dltui.protocol.inventory import MigInstance

Call = Callable[..., Any]
Errors = tuple[type[BaseException], ...]
"""What the gateway's call raises when NVML cannot answer."""

MIG_ENABLED = 1  # NVML_DEVICE_MIG_ENABLE
NOT_PER_INSTANCE = ("pcie_tx", "pcie_rx", "nvlink_tx", "nvlink_rx")
"""GPM metrics of the whole GPU's links, not of one instance."""
_PROFILE = re.compile(r"\b(\d+g\.\d+gb)\b")  # "NVIDIA H200 MIG 1g.18gb" -> "1g.18gb"


@dataclass(frozen=True)
class Instance:
    handle: Any
    info: MigInstance


def instances(call: Call, handle: Any, errors: Errors) -> list[Instance] | None:
    """The GPU's MIG instances; None when it is not in MIG mode (or NVML cannot say)."""
    try:
        current, _pending = call("nvmlDeviceGetMigMode", handle)
        if current != MIG_ENABLED:
            return None
        slots = call("nvmlDeviceGetMaxMigDeviceCount", handle)
    except errors:
        return None
    found = []
    for slot in range(slots):
        try:
            found.append(_instance(call, call("nvmlDeviceGetMigDeviceHandleByIndex", handle, slot),
                                   errors))  # fmt: skip
        except errors:  # an empty slot answers NotFound
            continue
    return found


def _instance(call: Call, handle: Any, errors: Errors) -> Instance:
    name = _text(call("nvmlDeviceGetName", handle))
    profile = _PROFILE.search(name)
    memory = call("nvmlDeviceGetMemoryInfo", handle)
    try:
        sm_count: int | None = int(call("nvmlDeviceGetAttributes", handle).multiprocessorCount)
    except errors:
        sm_count = None
    info = MigInstance(
        uuid=_text(call("nvmlDeviceGetUUID", handle)),
        gpu_instance=int(call("nvmlDeviceGetGpuInstanceId", handle)),
        compute_instance=int(call("nvmlDeviceGetComputeInstanceId", handle)),
        profile=profile.group(1) if profile else name,
        memory_total=int(memory.total),
        sm_count=sm_count,
    )
    return Instance(handle, info)


def memory(call: Call, instance: Instance) -> dict[str, float]:
    found = call("nvmlDeviceGetMemoryInfo", instance.handle)
    return {"mem_used": found.used, "mem_total": found.total}


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
