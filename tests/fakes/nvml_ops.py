"""The fake NVML's health, XID, per-process and MIG calls, written from NVML's documentation
(nvml.h and nvidia-ml-py's signatures and return shapes), as a mixin over `FakeNvml` and
`TopologyNvml`.

Each GPU's health lives in `GpuHealth`; a GPU may be split into MIG instances (`FakeMig`,
answering the calls NVML answers on a MIG device handle); XIDs wait in the event set's queue
until `nvmlEventSetWait` hands them out; processes that "hold a context" on a GPU announce it
with a file in a folder (`hold_context`), so a real process can appear on a fake GPU after the
agent has started.
"""

from __future__ import annotations

import os
import queue
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tests.fakes.nvml import FakeGpu, _error

NVMLError_NotFound = _error("NotFound", 6, "Not Found")
NVMLError_NoPermission = _error("NoPermission", 4, "Insufficient Permissions")
XID_EVENT = 0x8
NO_INSTANCE = 0xFFFFFFFF
NVLINK_ERRORS = {38: "crc_flit", 45: "crc_data", 52: "replay", 59: "recovery"}
"""NVML_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL field ids -> GpuHealth.nvlink_errors keys."""


@dataclass
class FakeMig(FakeGpu):
    """A MIG device handle: NVML answers its name, UUID and memory like a GPU's."""

    gpu_instance: int = 0
    compute_instance: int = 0
    sm_count: int = 16


@dataclass
class GpuHealth:
    pcie: tuple[int, int] | None = None
    """The link now (gen, width); None: the box's own answer."""
    pcie_max: tuple[int, int] = (5, 16)
    replay: int = 0
    retired: tuple[int, int, int] | None = None
    """(single-bit pages, double-bit pages, pending); None: NotSupported (Ampere and later)."""
    remapped: tuple[int, int, int, int] | None = (0, 0, 0, 0)
    """(correctable, uncorrectable, pending, failed); None: NotSupported (before Ampere)."""
    nvlink_errors: dict[str, int] = field(default_factory=dict)
    utilization: dict[int, tuple[int, int]] = field(default_factory=dict)
    """pid -> (SM %, memory %) for nvmlDeviceGetProcessUtilization."""
    mig: list[FakeMig] = field(default_factory=list)
    """MIG mode is on where this is not empty."""


def mig_instances(parent: FakeGpu, profiles: list[str]) -> list[FakeMig]:
    """Instances of the named profiles ("1g.18gb", "3g.71gb" …), in GPU instance order."""
    found = []
    for position, profile in enumerate(profiles):
        slices, memory = re.fullmatch(r"(\d+)g\.(\d+)gb", profile).groups()
        found.append(FakeMig(name=f"{parent.name} MIG {profile}",
                             uuid=f"MIG-{position:08x}-aaaa-bbbb-cccc-{position:012x}",
                             memory_total=int(memory) * 2**30, memory_used=0,
                             gpu_instance=position + 1, compute_instance=0,
                             sm_count=16 * int(slices)))  # fmt: skip
    return found


class OpsCalls:
    """Mixed in before FakeNvml: its `gpus` and `clock` are the base class's."""

    NVMLError_NotFound = NVMLError_NotFound
    NVMLError_NoPermission = NVMLError_NoPermission
    NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL = 38
    NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL = 45
    NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL = 52
    NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL = 59
    NVML_DEVICE_MIG_ENABLE = 1

    def __init__(self, *args: Any, contexts: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.health = [GpuHealth() for _ in self.gpus]
        self.events: queue.Queue[tuple[int, int]] = queue.Queue()
        """(GPU index, XID) waiting for nvmlEventSetWait."""
        self.registered: set[int] = set()
        self.contexts = Path(contexts) if contexts else None

    def _of(self, handle: FakeGpu) -> GpuHealth:
        return self.health[self.gpus.index(handle)]

    def inject_xid(self, gpu: int, code: int) -> None:
        self.events.put((gpu, code))

    # --- health ---------------------------------------------------------------------------

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: FakeGpu) -> int:
        now = self._of(handle).pcie
        return now[0] if now else super().nvmlDeviceGetCurrPcieLinkGeneration(handle)

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: FakeGpu) -> int:
        now = self._of(handle).pcie
        return now[1] if now else super().nvmlDeviceGetCurrPcieLinkWidth(handle)

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: FakeGpu) -> int:
        return self._of(handle).pcie_max[0]

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: FakeGpu) -> int:
        return self._of(handle).pcie_max[1]

    def nvmlDeviceGetPcieReplayCounter(self, handle: FakeGpu) -> int:
        self._enter("nvmlDeviceGetPcieReplayCounter", handle)
        return self._of(handle).replay

    def nvmlDeviceGetRetiredPages(self, device: FakeGpu, sourceFilter: int) -> list[int]:
        self._enter("nvmlDeviceGetRetiredPages", device)
        retired = self._of(device).retired
        if retired is None:
            raise self.NVMLError_NotSupported()
        return [0x1000 * page for page in range(retired[sourceFilter])]

    def nvmlDeviceGetRetiredPagesPendingStatus(self, device: FakeGpu) -> int:
        retired = self._of(device).retired
        if retired is None:
            raise self.NVMLError_NotSupported()
        return retired[2]

    def nvmlDeviceGetRemappedRows(self, device: FakeGpu) -> tuple[int, int, int, int]:
        self._enter("nvmlDeviceGetRemappedRows", device)
        remapped = self._of(device).remapped
        if remapped is None:
            raise self.NVMLError_NotSupported()
        return remapped

    def nvmlDeviceGetFieldValues(self, handle: FakeGpu, fieldIds: list[Any]) -> list[Any]:
        if not all(type(field_id) is int for field_id in fieldIds):
            return super().nvmlDeviceGetFieldValues(handle, fieldIds)  # throughput (id, scope)
        self._enter("nvmlDeviceGetFieldValues", handle)
        handle.field_requests.append(list(fieldIds))
        counts = self._of(handle).nvlink_errors
        return [SimpleNamespace(fieldId=field_id, scopeId=0, timestamp=0, latencyUsec=0,
                                valueType=3, value=SimpleNamespace(ullVal=counts.get(
                                    NVLINK_ERRORS.get(field_id, ""), 0)),
                                nvmlReturn=0 if handle.links and field_id in NVLINK_ERRORS
                                else self.NVMLError_NotSupported.value)
                for field_id in fieldIds]  # fmt: skip

    # --- XID events -----------------------------------------------------------------------

    def nvmlEventSetCreate(self) -> object:
        return self.events

    def nvmlDeviceRegisterEvents(self, handle: FakeGpu, eventTypes: int, eventSet: Any) -> None:
        self._enter("nvmlDeviceRegisterEvents", handle)
        assert eventSet is self.events and eventTypes & XID_EVENT
        self.registered.add(self.gpus.index(handle))

    def nvmlEventSetWait(self, eventSet: Any, timeoutms: int) -> SimpleNamespace:
        try:
            gpu, code = eventSet.get(timeout=timeoutms / 1000)
        except queue.Empty:
            raise self.NVMLError_Timeout() from None
        return SimpleNamespace(device=self.gpus[gpu], eventType=XID_EVENT, eventData=code,
                               gpuInstanceId=NO_INSTANCE,
                               computeInstanceId=NO_INSTANCE)  # fmt: skip

    def nvmlEventSetFree(self, eventSet: Any) -> None:
        self.calls["nvmlEventSetFree"] += 1

    def nvmlDeviceGetIndex(self, handle: FakeGpu) -> int:
        return self.gpus.index(handle)

    # --- processes ------------------------------------------------------------------------

    def nvmlDeviceGetComputeRunningProcesses(self, handle: FakeGpu) -> list[SimpleNamespace]:
        listed = super().nvmlDeviceGetComputeRunningProcesses(handle)
        index = self.gpus.index(handle)
        for pid, memory in held_contexts(self.contexts, index):
            listed.append(SimpleNamespace(pid=pid, usedGpuMemory=memory, gpuInstanceId=NO_INSTANCE,
                                          computeInstanceId=NO_INSTANCE))  # fmt: skip
        for mig in self._of(handle).mig:
            for pid, memory in mig.processes:
                listed.append(SimpleNamespace(pid=pid, usedGpuMemory=memory,
                                              gpuInstanceId=mig.gpu_instance,
                                              computeInstanceId=mig.compute_instance))  # fmt: skip
        return listed

    def nvmlDeviceGetProcessUtilization(self, handle: FakeGpu, timeStamp: int) -> list[Any]:
        self._enter("nvmlDeviceGetProcessUtilization", handle)
        now = int(self.clock() * 1e6)
        found = self._of(handle).utilization
        if timeStamp >= now or not found:
            raise self.NVMLError_NotFound()
        return [SimpleNamespace(pid=pid, timeStamp=now, smUtil=sm, memUtil=memory, encUtil=0,
                                decUtil=0)
                for pid, (sm, memory) in found.items()]  # fmt: skip

    # --- MIG --------------------------------------------------------------------------------

    def nvmlDeviceGetMigMode(self, device: FakeGpu) -> list[int]:
        if isinstance(device, FakeMig):
            raise self.NVMLError_NotSupported()
        return [1, 1] if self._of(device).mig else [0, 0]

    def nvmlDeviceGetMaxMigDeviceCount(self, device: FakeGpu) -> int:
        return 7 if self._of(device).mig else 0

    def nvmlDeviceGetMigDeviceHandleByIndex(self, device: FakeGpu, index: int) -> FakeMig:
        instances = self._of(device).mig
        if index >= len(instances):
            raise self.NVMLError_NotFound()
        return instances[index]

    def nvmlDeviceGetGpuInstanceId(self, device: FakeMig) -> int:
        return device.gpu_instance

    def nvmlDeviceGetComputeInstanceId(self, device: FakeMig) -> int:
        return device.compute_instance

    def nvmlDeviceGetAttributes(self, device: FakeMig) -> SimpleNamespace:
        return SimpleNamespace(multiprocessorCount=device.sm_count, gpuInstanceSliceCount=1,
                               computeInstanceSliceCount=1,
                               memorySizeMB=device.memory_total >> 20)  # fmt: skip

    def nvmlGpmMigSampleGet(self, device: FakeGpu, gpuInstanceId: int, gpmSample: Any) -> Any:
        self._enter("nvmlGpmMigSampleGet", device)
        (mig,) = [m for m in self._of(device).mig if m.gpu_instance == gpuInstanceId]
        gpmSample.gpu, gpmSample.time = mig, self.clock()
        return gpmSample


def hold_context(folder: Path, gpu: int, memory: int) -> Path:
    """Say that this process holds a context on fake GPU `gpu` (with `memory` bytes), by its
    PID as the host sees it, as NVML gives it: read from the host's /proc, which a process in
    a PID namespace of its own still sees unless it mounted one of its own."""
    path = folder / Path("/proc/self").resolve().name
    path.write_text(f"{gpu} {memory}\n")
    return path


def held_contexts(folder: Path | None, gpu: int) -> list[tuple[int, int]]:
    """(pid, memory) of the live processes that hold a context on `gpu`."""
    if folder is None or not folder.is_dir():
        return []
    held = []
    for path in folder.iterdir():
        try:
            index, memory = path.read_text().split()
            pid = int(path.name)
            os.kill(pid, 0)
        except (OSError, ValueError):
            continue  # gone, or half written
        if int(index) == gpu:
            held.append((pid, int(memory)))
    return held
