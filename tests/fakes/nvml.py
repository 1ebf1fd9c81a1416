"""A small pynvml look-alike for the NVML gateway's tests and for agents under test: the same
names, signatures and error classes, GPUs as plain objects a test sets (FakeGpu), a clock a
test moves (FakeClock), and the counts of every call. nvml_shim/pynvml.py serves it to agent
processes; tests import it from here, never from another test module."""

from __future__ import annotations

import ctypes
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, ClassVar

from dltui.telemetry.nvml_reads import ALL_LINKS

_MESSAGES: dict[int, str] = {}


class NVMLError(Exception):
    """Like pynvml's: NVMLError(code) builds the subclass registered for that code."""

    _by_code: ClassVar[dict[int, type[NVMLError]]] = {}
    value = 999

    def __new__(cls, value: int | None = None) -> NVMLError:
        if cls is NVMLError and value in NVMLError._by_code:
            cls = NVMLError._by_code[value]
        return Exception.__new__(cls)

    def __init__(self, value: int | None = None) -> None:
        super().__init__()
        if value is not None:
            self.value = value

    def __str__(self) -> str:
        return _MESSAGES.get(self.value, f"NVML Error with code {self.value}")


def _error(name: str, code: int, message: str) -> type[NVMLError]:
    cls = type(f"NVMLError_{name}", (NVMLError,), {"value": code})
    NVMLError._by_code[code] = cls
    _MESSAGES[code] = message
    return cls


NVMLError_Uninitialized = _error("Uninitialized", 1, "Uninitialized")
NVMLError_InvalidArgument = _error("InvalidArgument", 2, "Invalid Argument")
NVMLError_NotSupported = _error("NotSupported", 3, "Not Supported")
NVMLError_DriverNotLoaded = _error("DriverNotLoaded", 9, "Driver Not Loaded")
NVMLError_Timeout = _error("Timeout", 10, "Timeout")
NVMLError_LibraryNotFound = _error("LibraryNotFound", 12, "NVML Shared Library Not Found")
NVMLError_FunctionNotFound = _error("FunctionNotFound", 13, "Function Not Found")
NVMLError_GpuIsLost = _error("GpuIsLost", 15, "GPU is lost")
NVMLError_Unknown = _error("Unknown", 999, "Unknown Error")

SM_UTIL, SM_OCCUPANCY, ANY_TENSOR_UTIL, DRAM_BW_UTIL = 2, 3, 5, 10
PCIE_TX_PER_SEC, PCIE_RX_PER_SEC, NVLINK_RX_PER_SEC, NVLINK_TX_PER_SEC = 20, 21, 60, 61
FI_TX, FI_RX = 138, 139


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class FakeGpu:
    name: str = "NVIDIA H200"
    uuid: str = "GPU-0"
    memory_total: int = 150_754_820_096
    memory_used: int = 1_000_000
    util: tuple[int, int] = (0, 0)
    power_mw: int = 75_000
    power_limit_mw: int = 700_000
    energy_mj: int = 0
    temp: int = 30
    clocks: dict[int, int] = field(default_factory=lambda: {1: 1980, 2: 3201})
    throttle: int = 0x1
    ecc: tuple[int, int] = (0, 0)
    pcie_kbps: tuple[int, int] = (0, 0)
    links: list[int] = field(default_factory=list)
    """NvLinkState per link; empty: NVLink queries answer NotSupported (a one-GPU H200)."""
    all_links_scope: bool = True
    nvlink_kib: dict[int, list[int]] = field(default_factory=dict)
    gpm: bool = False
    gpm_values: dict[int, float] = field(default_factory=dict)
    gpm_unsupported: set[int] = field(default_factory=set)
    processes: list[tuple[int, int | None]] = field(default_factory=list)
    """(pid, usedGpuMemory) as nvidia-ml-py gives them (None where the driver cannot say)."""
    faults: dict[str, Any] = field(default_factory=dict)
    faults_once: dict[str, Any] = field(default_factory=dict)
    calls: Counter[str] = field(default_factory=Counter)
    field_requests: list[list[tuple[int, int]]] = field(default_factory=list)
    gpm_spans: list[float] = field(default_factory=list)
    gpm_requests: list[list[int]] = field(default_factory=list)


class FakeMetricsGet:
    def __init__(self) -> None:
        self.version = 0
        self.numMetrics = 0
        self.sample1: Any = None
        self.sample2: Any = None
        self.metrics = [SimpleNamespace(metricId=0, nvmlReturn=0, value=0.0) for _ in range(98)]


class FakeNvml:
    """The slice of pynvml the gateway uses. Handles are the FakeGpu objects themselves."""

    NVMLError = NVMLError
    NVMLError_Uninitialized = NVMLError_Uninitialized
    NVMLError_InvalidArgument = NVMLError_InvalidArgument
    NVMLError_NotSupported = NVMLError_NotSupported
    NVMLError_DriverNotLoaded = NVMLError_DriverNotLoaded
    NVMLError_Timeout = NVMLError_Timeout
    NVMLError_LibraryNotFound = NVMLError_LibraryNotFound
    NVMLError_FunctionNotFound = NVMLError_FunctionNotFound
    NVMLError_GpuIsLost = NVMLError_GpuIsLost
    NVMLError_Unknown = NVMLError_Unknown
    NVML_FEATURE_ENABLED = 1
    NVML_TEMPERATURE_GPU = 0
    NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2
    NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 0, 1
    NVML_VOLATILE_ECC = 0
    NVML_PCIE_UTIL_TX_BYTES, NVML_PCIE_UTIL_RX_BYTES = 0, 1
    NVML_NVLINK_MAX_LINKS = 18
    NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = FI_TX, FI_RX
    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3
    NVML_GPM_METRICS_GET_VERSION = 1
    NVML_GPM_METRIC_SM_UTIL = SM_UTIL
    NVML_GPM_METRIC_SM_OCCUPANCY = SM_OCCUPANCY
    NVML_GPM_METRIC_ANY_TENSOR_UTIL = ANY_TENSOR_UTIL
    NVML_GPM_METRIC_DRAM_BW_UTIL = DRAM_BW_UTIL
    NVML_GPM_METRIC_PCIE_TX_PER_SEC = PCIE_TX_PER_SEC
    NVML_GPM_METRIC_PCIE_RX_PER_SEC = PCIE_RX_PER_SEC
    NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC = NVLINK_RX_PER_SEC
    NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC = NVLINK_TX_PER_SEC
    c_nvmlGpmMetricsGet_t = FakeMetricsGet

    def __init__(
        self, gpus: list[FakeGpu], init_error: Any = None, missing: set[str] = frozenset()
    ):
        self.gpus = gpus
        self.init_error = init_error
        self.missing = set(missing)
        self.clock = FakeClock()
        self.calls: Counter[str] = Counter()
        self.allocated: list[Any] = []
        self.freed: list[Any] = []

    def __getattribute__(self, name: str) -> Any:
        # An older nvidia-ml-py simply lacks the function.
        if name in object.__getattribute__(self, "missing"):
            raise AttributeError(name)
        return object.__getattribute__(self, name)

    def _enter(self, name: str, gpu: FakeGpu | None = None) -> None:
        self.calls[name] += 1
        if gpu is not None:
            gpu.calls[name] += 1
            if name in gpu.faults_once:
                raise gpu.faults_once.pop(name)
            if name in gpu.faults:
                raise gpu.faults[name]

    def nvmlInit(self) -> None:
        self._enter("nvmlInit")
        if self.init_error is not None:
            raise self.init_error

    def nvmlShutdown(self) -> None:
        self._enter("nvmlShutdown")

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlSystemGetDriverVersion(self) -> str:
        return "570.86.15"

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return 12080

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:
        self._enter("nvmlDeviceGetHandleByIndex", self.gpus[index])
        return self.gpus[index]

    def nvmlDeviceGetName(self, handle: FakeGpu) -> str:
        return handle.name

    def nvmlDeviceGetUUID(self, handle: FakeGpu) -> str:
        return handle.uuid

    def nvmlDeviceGetMemoryInfo(self, handle: FakeGpu) -> SimpleNamespace:
        self._enter("nvmlDeviceGetMemoryInfo", handle)
        used, total = handle.memory_used, handle.memory_total
        return SimpleNamespace(total=total, free=total - used, used=used)

    def nvmlDeviceGetUtilizationRates(self, handle: FakeGpu) -> SimpleNamespace:
        self._enter("nvmlDeviceGetUtilizationRates", handle)
        return SimpleNamespace(gpu=handle.util[0], memory=handle.util[1])

    def nvmlDeviceGetPowerUsage(self, handle: FakeGpu) -> int:
        self._enter("nvmlDeviceGetPowerUsage", handle)
        return handle.power_mw

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: FakeGpu) -> int:
        self._enter("nvmlDeviceGetEnforcedPowerLimit", handle)
        return handle.power_limit_mw

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: FakeGpu) -> int:
        self._enter("nvmlDeviceGetTotalEnergyConsumption", handle)
        return handle.energy_mj

    def nvmlDeviceGetTemperature(self, handle: FakeGpu, sensor: int) -> int:
        self._enter("nvmlDeviceGetTemperature", handle)
        assert sensor == self.NVML_TEMPERATURE_GPU
        return handle.temp

    def nvmlDeviceGetClockInfo(self, handle: FakeGpu, type: int) -> int:
        self._enter("nvmlDeviceGetClockInfo", handle)
        return handle.clocks[type]

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: FakeGpu) -> int:
        self._enter("nvmlDeviceGetCurrentClocksEventReasons", handle)
        return handle.throttle

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: FakeGpu) -> int:
        self._enter("nvmlDeviceGetCurrentClocksThrottleReasons", handle)
        return handle.throttle

    def nvmlDeviceGetTotalEccErrors(self, handle: FakeGpu, errorType: int, counterType: int):
        self._enter("nvmlDeviceGetTotalEccErrors", handle)
        assert counterType == self.NVML_VOLATILE_ECC
        return handle.ecc[errorType]

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: FakeGpu) -> int:
        return 5

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: FakeGpu) -> int:
        return 16

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: FakeGpu) -> int:
        return 5

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: FakeGpu) -> int:
        return 16

    def nvmlDeviceGetNvLinkState(self, device: FakeGpu, link: int) -> int:
        self._enter("nvmlDeviceGetNvLinkState", device)
        if not device.links:
            raise NVMLError_NotSupported()
        if link >= len(device.links):
            raise NVMLError_InvalidArgument()
        return device.links[link]

    def nvmlDeviceGetFieldValues(self, handle: FakeGpu, fieldIds: list[Any]) -> list[Any]:
        self._enter("nvmlDeviceGetFieldValues", handle)
        handle.field_requests.append(list(fieldIds))
        return [self._field_value(handle, field_id, scope) for field_id, scope in fieldIds]

    def _field_value(self, gpu: FakeGpu, field_id: int, scope: int) -> SimpleNamespace:
        counter = {FI_TX: 0, FI_RX: 1}.get(field_id)
        code, kib = 0, 0
        if counter is None or not gpu.links:
            code = NVMLError_NotSupported.value
        elif scope == ALL_LINKS:
            if gpu.all_links_scope:
                kib = sum(counts[counter] for counts in gpu.nvlink_kib.values())
            else:
                code = NVMLError_InvalidArgument.value
        else:
            kib = gpu.nvlink_kib.get(scope, [0, 0])[counter]
        return SimpleNamespace(
            fieldId=field_id,
            scopeId=scope,
            timestamp=int(self.clock() * 1e6),
            latencyUsec=0,
            valueType=self.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG,
            nvmlReturn=code,
            value=SimpleNamespace(ullVal=kib),
        )

    def nvmlDeviceGetComputeRunningProcesses(self, handle: FakeGpu) -> list[SimpleNamespace]:
        self._enter("nvmlDeviceGetComputeRunningProcesses", handle)
        return [SimpleNamespace(pid=pid, usedGpuMemory=memory, gpuInstanceId=0xFFFFFFFF)
                for pid, memory in handle.processes]  # fmt: skip

    def nvmlDeviceGetPcieThroughput(self, device: FakeGpu, counter: int) -> int:
        self._enter("nvmlDeviceGetPcieThroughput", device)
        return device.pcie_kbps[counter]

    def nvmlGpmQueryDeviceSupport(self, device: FakeGpu) -> SimpleNamespace:
        return SimpleNamespace(version=1, isSupportedDevice=int(device.gpm))

    def nvmlGpmSampleAlloc(self) -> SimpleNamespace:
        sample = SimpleNamespace(gpu=None, time=None)
        self.allocated.append(sample)
        return sample

    def nvmlGpmSampleFree(self, gpmSample: Any) -> None:
        self.freed.append(gpmSample)

    def nvmlGpmSampleGet(self, device: FakeGpu, gpmSample: Any) -> Any:
        self._enter("nvmlGpmSampleGet", device)
        gpmSample.gpu, gpmSample.time = device, self.clock()
        return gpmSample

    def nvmlGpmMetricsGet(self, metricsGet: FakeMetricsGet) -> FakeMetricsGet:
        first, second = metricsGet.sample1, metricsGet.sample2
        assert metricsGet.version == 1 and first.gpu is second.gpu
        gpu = second.gpu
        gpu.gpm_spans.append(second.time - first.time)
        wanted = metricsGet.metrics[: metricsGet.numMetrics]
        gpu.gpm_requests.append([metric.metricId for metric in wanted])
        for metric in wanted:
            if metric.metricId in gpu.gpm_unsupported:
                metric.nvmlReturn = NVMLError_NotSupported.value
            else:
                metric.nvmlReturn, metric.value = 0, gpu.gpm_values.get(metric.metricId, 0.0)
        return metricsGet


class FakeNvmlWithC(FakeNvml):
    """The fake with pynvml's way to NVML's C functions: each answers through the pointer it is
    given and returns NVML's code, as libnvidia-ml does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.answers: dict[str, list[Any]] = {}
        """C function -> the answer it was handed, each call."""

    def _nvmlGetFunctionPointer(self, name: str) -> Callable[..., int]:
        if name in self.missing:
            raise NVMLError_FunctionNotFound()
        function = getattr(self, name)

        def c_function(handle: FakeGpu, *args: Any) -> int:
            *args, pointer = args
            answer = pointer._obj  # what ctypes.byref points at
            self.answers.setdefault(name, []).append(answer)
            try:
                result = function(handle, *args)
            except NVMLError as exc:
                return exc.value
            if isinstance(answer, ctypes.Structure):
                for member, _ in answer._fields_:
                    setattr(answer, member, getattr(result, member))
            else:
                answer.value = result
            return 0

        return c_function
