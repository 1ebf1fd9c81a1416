"""The NVML gateway against a fake pynvml: support detection, errors, lost GPUs, units, rates."""

from __future__ import annotations

import ctypes
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from dltui.protocol.fields import GPU_FIELDS
from dltui.protocol.messages import GpuProcess
from dltui.telemetry.nvml import NvmlGateway
from dltui.telemetry.nvml_reads import ALL_LINKS, FAST_INTERVALS, JOB_INTERVALS, SLOW_INTERVALS

GPM_STEP = SLOW_INTERVALS["gpm"]
"""How often GPM, and the NVLink and PCIe fallbacks, are read."""

# --- a small pynvml look-alike: same names, signatures and error classes --------------------

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


BOTH_WAYS = pytest.mark.parametrize("c_functions", [False, True], ids=["functions", "c-functions"])
"""The cheap reads through a fake NVML module's functions, and through pynvml's C functions."""


def opened(
    *gpus: FakeGpu, c_functions: bool = False, **options: Any
) -> tuple[NvmlGateway, FakeNvml]:
    nvml = (FakeNvmlWithC if c_functions else FakeNvml)(list(gpus) or [FakeGpu()], **options)
    gateway = NvmlGateway(nvml=nvml, clock=nvml.clock)
    gateway.open()
    return gateway, nvml


# --- starting NVML ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (NVMLError_LibraryNotFound(), "NVML library not found"),
        (NVMLError_DriverNotLoaded(), "driver not loaded"),
        (NVMLError_Unknown(), "Unknown Error"),
    ],
)
def test_init_failure_means_zero_gpus_and_a_reason(error: NVMLError, words: str) -> None:
    gateway, _ = opened(FakeGpu(), init_error=error)
    assert gateway.count == 0
    assert gateway.gpus == []
    assert gateway.error is not None and words in gateway.error
    assert gateway.read_fast() == []
    assert gateway.read_slow() == {}
    gateway.close()


def test_missing_nvidia_ml_py_means_zero_gpus_and_a_reason(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` fail
    gateway = NvmlGateway()
    gateway.open()
    assert gateway.count == 0
    assert gateway.error is not None and "nvidia-ml-py" in gateway.error


def test_real_pynvml_never_raises() -> None:
    gateway = NvmlGateway()
    gateway.open()
    if gateway.count == 0:  # this machine: no driver
        assert gateway.error
    else:
        assert gateway.error is None and len(gateway.read_fast()) == gateway.count
    gateway.close()


def test_inventory_per_gpu() -> None:
    h200 = FakeGpu(name="NVIDIA H200", uuid="GPU-abc", gpm=True)
    nvlinked = FakeGpu(uuid="GPU-def", links=[1, 1, 0, 1])
    gateway, _ = opened(h200, nvlinked)
    assert gateway.driver_version == "570.86.15"
    assert gateway.cuda_version == "12.8"
    assert gateway.error is None
    first, second = gateway.gpus
    assert (first.index, first.name, first.uuid) == (0, "NVIDIA H200", "GPU-abc")
    assert first.memory_total == 150_754_820_096
    assert (first.pcie_gen, first.pcie_width, first.pcie_gen_max, first.pcie_width_max) == (
        5,
        16,
        5,
        16,
    )
    assert (first.nvlink_links, first.gpm) == (0, True)
    assert (second.nvlink_links, second.gpm) == (3, False)


# --- cheap reads ------------------------------------------------------------------------------


@BOTH_WAYS
def test_fast_read_converts_units(c_functions: bool) -> None:
    gpu = FakeGpu(
        util=(97, 41),
        memory_used=80 * 2**30,
        power_mw=691_250,
        power_limit_mw=700_000,
        energy_mj=123_456_789,
        temp=67,
        throttle=0x4,
        ecc=(2, 1),
    )
    gateway, _ = opened(gpu, c_functions=c_functions)
    (sample,) = gateway.read_fast()
    assert sample.state == "ok" and sample.errors == {}
    assert sample.values == {
        "util_gpu": 97,
        "util_mem": 41,
        "mem_used": 80 * 2**30,
        "mem_total": 150_754_820_096,
        "power": pytest.approx(691.25),
        "temp": 67,
        "clock_sm": 1980,
        "throttle": 0x4,
    }
    assert set(sample.values) <= set(GPU_FIELDS)
    # The energy counter took milliseconds per call on the H200, and the rest change slowly:
    # they are slow reads.
    assert gateway.read_slow()[0] == {
        "energy": pytest.approx(123_456.789),
        "power_limit": pytest.approx(700.0),
        "clock_mem": 3201,
        "ecc_corrected": 2,
        "ecc_uncorrected": 1,
        "pcie_tx": 0,
        "pcie_rx": 0,
        "pcie_gen": 5,  # health: the link now, every 5 s
        "pcie_width": 16,
    }
    assert gpu.calls["nvmlDeviceGetTotalEnergyConsumption"] == 1


@BOTH_WAYS
def test_a_fast_read_taken_at_an_interval_is_carried_by_the_ticks_between(
    c_functions: bool,
) -> None:
    gpu = FakeGpu(util=(10, 1))
    gateway, nvml = opened(gpu, c_functions=c_functions)
    tick, span = 0.05, 2 * max(FAST_INTERVALS.values())
    inventory_reads = gpu.calls.copy()
    seen = []
    for _ in range(round(span / tick)):
        (sample,) = gateway.read_fast()
        seen.append((sample.values["util_gpu"], sample.values["mem_used"]))
        gpu.util = (gpu.util[0] + 1, 1)  # the driver's values move; ticks between reads carry
        gpu.memory_used += 1
        nvml.clock.now += tick
    for position, group in enumerate(("util", "memory")):
        per_read = round(FAST_INTERVALS[group] / tick)
        values = [tick_values[position] for tick_values in seen]
        assert values == [values[0] + per_read * (n // per_read) for n in range(len(values))]
    calls = gpu.calls - inventory_reads
    assert calls["nvmlDeviceGetUtilizationRates"] == round(span / FAST_INTERVALS["util"])
    assert calls["nvmlDeviceGetMemoryInfo"] == round(span / FAST_INTERVALS["memory"])
    assert calls["nvmlDeviceGetPowerUsage"] == round(span / tick)  # every tick


def test_each_cheap_read_calls_nvml_straight_into_an_answer_allocated_once() -> None:
    gateway, nvml = opened(FakeGpu(util=(97, 41)), c_functions=True)
    for _ in range(3):
        (sample,) = gateway.read_fast()
        nvml.clock.now += max(FAST_INTERVALS.values())  # every read, every time
    assert sample.values["util_gpu"] == 97 and sample.values["power"] == 75.0
    assert set(nvml.answers) == {
        "nvmlDeviceGetUtilizationRates",
        "nvmlDeviceGetMemoryInfo",
        "nvmlDeviceGetPowerUsage",
        "nvmlDeviceGetTemperature",
        "nvmlDeviceGetClockInfo",
        "nvmlDeviceGetCurrentClocksEventReasons",
    }
    for answers in nvml.answers.values():
        assert len(answers) == 3 and all(answer is answers[0] for answer in answers)


@BOTH_WAYS
def test_a_slowly_refreshed_read_that_fails_is_asked_again_next_tick(c_functions: bool) -> None:
    gpu = FakeGpu(util=(10, 1))
    gateway, nvml = opened(gpu, c_functions=c_functions)
    gateway.read_fast()
    nvml.clock.now += FAST_INTERVALS["util"]
    gpu.faults_once["nvmlDeviceGetUtilizationRates"] = NVMLError_Unknown()
    (failed,) = gateway.read_fast()
    assert "util_gpu" not in failed.values
    assert failed.errors == {"util_gpu": "Unknown Error", "util_mem": "Unknown Error"}
    nvml.clock.now += 0.05
    (again,) = gateway.read_fast()
    assert again.values["util_gpu"] == 10
    assert gpu.calls["nvmlDeviceGetUtilizationRates"] == 3


def test_not_supported_field_is_absent_and_never_asked_again() -> None:
    gpu = FakeGpu(faults={"nvmlDeviceGetTotalEccErrors": NVMLError_NotSupported()})
    gateway, nvml = opened(gpu)
    for _ in range(3):
        values = gateway.read_slow()[0]
        assert "ecc_corrected" not in values and "ecc_uncorrected" not in values
        assert values["power_limit"] == 700.0
        nvml.clock.now += SLOW_INTERVALS["ecc_corrected"]
    assert gpu.calls["nvmlDeviceGetTotalEccErrors"] == 2  # once per field, on the first read
    assert gpu.calls["nvmlDeviceGetEnforcedPowerLimit"] == 3


def test_energy_not_supported_is_absent_and_never_asked_again() -> None:
    gpu = FakeGpu(faults={"nvmlDeviceGetTotalEnergyConsumption": NVMLError_NotSupported()})
    gateway, nvml = opened(gpu)
    for _ in range(3):
        assert "energy" not in gateway.read_slow().get(0, {})
        nvml.clock.now += SLOW_INTERVALS["energy"]
    assert gpu.calls["nvmlDeviceGetTotalEnergyConsumption"] == 1


def test_the_energy_counter_is_read_more_often_while_a_benchmark_job_runs() -> None:
    gpu = FakeGpu()
    gateway, nvml = opened(gpu)
    step = JOB_INTERVALS["energy"]
    assert SLOW_INTERVALS["energy"] > 2 * step
    energy_read = []
    for tick in range(round(2 * SLOW_INTERVALS["energy"] / step)):
        job_running = tick >= round(SLOW_INTERVALS["energy"] / step)  # the second half
        energy_read.append("energy" in gateway.read_slow(job_running).get(0, {}))
        nvml.clock.now += step
    idle, busy = energy_read[: len(energy_read) // 2], energy_read[len(energy_read) // 2 :]
    assert idle == [True] + [False] * (len(idle) - 1)
    assert all(busy)


@BOTH_WAYS
def test_function_missing_from_pynvml_is_unsupported_and_throttle_falls_back(
    c_functions: bool,
) -> None:
    gateway, nvml = opened(
        FakeGpu(throttle=0x40),
        missing={"nvmlDeviceGetCurrentClocksEventReasons"},
        c_functions=c_functions,
    )
    for _ in range(2):
        (sample,) = gateway.read_fast()
        assert sample.values["throttle"] == 0x40
    assert nvml.calls["nvmlDeviceGetCurrentClocksThrottleReasons"] == 2

    gateway, nvml = opened(
        FakeGpu(),
        missing={
            "nvmlDeviceGetCurrentClocksEventReasons",
            "nvmlDeviceGetCurrentClocksThrottleReasons",
        },
        c_functions=c_functions,
    )
    for _ in range(2):
        (sample,) = gateway.read_fast()
        assert "throttle" not in sample.values and sample.errors == {}
        assert "power" in sample.values


@BOTH_WAYS
def test_throttle_falls_back_when_the_driver_lacks_the_new_function(c_functions: bool) -> None:
    gpu = FakeGpu(faults={"nvmlDeviceGetCurrentClocksEventReasons": NVMLError_FunctionNotFound()})
    gateway, _ = opened(gpu, c_functions=c_functions)
    (sample,) = gateway.read_fast()
    assert sample.values["throttle"] == 0x1


@BOTH_WAYS
def test_other_errors_last_one_tick(c_functions: bool) -> None:
    gpu = FakeGpu(faults_once={"nvmlDeviceGetPowerUsage": NVMLError_Unknown()})
    gateway, _ = opened(gpu, c_functions=c_functions)
    (first,) = gateway.read_fast()
    assert first.state == "ok"
    assert "power" not in first.values
    assert first.errors == {"power": "Unknown Error"}
    assert first.values["temp"] == 30
    (second,) = gateway.read_fast()
    assert second.values["power"] == 75.0
    assert second.errors == {}
    assert gpu.calls["nvmlDeviceGetPowerUsage"] == 2


@BOTH_WAYS
def test_lost_gpu_is_sticky_and_the_others_go_on(c_functions: bool) -> None:
    healthy, failing = FakeGpu(uuid="GPU-0"), FakeGpu(uuid="GPU-1", gpm=True)
    gateway, _ = opened(healthy, failing, c_functions=c_functions)
    failing.faults["nvmlDeviceGetPowerUsage"] = NVMLError_GpuIsLost()
    ok, lost = gateway.read_fast()
    assert (ok.state, lost.state) == ("ok", "lost")
    assert lost.values == {} and lost.errors == {}
    assert ok.values["power"] == 75.0

    failing.faults.clear()  # even if it answers again, a lost GPU stays lost
    calls = sum(failing.calls.values())
    for _ in range(3):
        ok, lost = gateway.read_fast()
        assert (ok.state, lost.state) == ("ok", "lost")
    assert 1 not in gateway.read_slow()
    assert sum(failing.calls.values()) == calls


@BOTH_WAYS
def test_uninitialized_after_a_loss_is_a_loss_but_alone_an_error(c_functions: bool) -> None:
    gateway, _ = opened(
        FakeGpu(faults_once={"nvmlDeviceGetTemperature": NVMLError_Uninitialized()}),
        c_functions=c_functions,
    )
    (sample,) = gateway.read_fast()
    assert sample.state == "ok" and sample.errors == {"temp": "Uninitialized"}

    first = FakeGpu(faults={"nvmlDeviceGetUtilizationRates": NVMLError_GpuIsLost()})
    second = FakeGpu(faults={"nvmlDeviceGetUtilizationRates": NVMLError_Uninitialized()})
    gateway, _ = opened(first, second, c_functions=c_functions)
    assert [sample.state for sample in gateway.read_fast()] == ["lost", "lost"]


# --- NVLink -----------------------------------------------------------------------------------


def test_nvlink_rates_from_the_all_links_counters() -> None:
    gpu = FakeGpu(links=[1, 1], nvlink_kib={0: [1000, 100], 1: [1000, 100]})
    gateway, nvml = opened(gpu)
    first = gateway.read_slow()[0]
    assert "nvlink_tx" not in first  # a rate needs two reads; the counters are there at once
    assert (first["nvlink_tx_bytes"], first["nvlink_rx_bytes"]) == (2000 * 1024, 200 * 1024)
    gpu.nvlink_kib[0][0] += 3000
    gpu.nvlink_kib[1][0] += 2000
    gpu.nvlink_kib[1][1] += 500
    nvml.clock.now += GPM_STEP
    second = gateway.read_slow()[0]
    assert second["nvlink_tx"] == pytest.approx(5000 * 1024 / GPM_STEP)
    assert second["nvlink_rx"] == pytest.approx(500 * 1024 / GPM_STEP)
    assert second["nvlink_tx_bytes"] == 7000 * 1024
    assert gpu.field_requests[-1] == [(FI_TX, ALL_LINKS), (FI_RX, ALL_LINKS)]
    # Milliseconds a call on NVLink machines: never on the fast tick.
    requests = len(gpu.field_requests)
    assert "nvlink_tx" not in gateway.read_fast()[0].values
    assert len(gpu.field_requests) == requests


def test_nvlink_sums_active_links_when_the_all_links_scope_is_refused() -> None:
    gpu = FakeGpu(links=[1, 0, 1], all_links_scope=False, nvlink_kib={0: [0, 0], 2: [0, 0]})
    gateway, nvml = opened(gpu)
    for _ in range(2):
        assert "nvlink_tx" not in gateway.read_slow()[0]
        nvml.clock.now += GPM_STEP
    assert gpu.field_requests[-1] == [(FI_TX, 0), (FI_TX, 2), (FI_RX, 0), (FI_RX, 2)]
    gpu.nvlink_kib[0] = [100, 10]
    gpu.nvlink_kib[2] = [100, 30]
    values = gateway.read_slow()[0]
    assert values["nvlink_tx"] == pytest.approx(200 * 1024 / GPM_STEP)
    assert values["nvlink_rx"] == pytest.approx(40 * 1024 / GPM_STEP)


def test_nvlink_absent_on_a_gpu_without_links() -> None:
    gpu = FakeGpu()  # every NVLink query: NotSupported
    gateway, nvml = opened(gpu)
    for _ in range(3):
        nvml.clock.now += GPM_STEP
        (sample,) = gateway.read_fast()
        slow = gateway.read_slow()[0]
        assert not {"nvlink_tx", "nvlink_rx"} & (set(sample.values) | set(slow))
        assert sample.errors == {}
    assert gpu.calls["nvmlDeviceGetFieldValues"] == 0  # no active links: never asked


def test_never_reads_the_pcie_byte_counter_fields() -> None:
    # NVML_FI_DEV_PCIE_COUNT_TX/RX_BYTES do not count data traffic on the H200.
    gpu = FakeGpu(links=[1], nvlink_kib={0: [0, 0]})
    gateway, nvml = opened(gpu)
    for _ in range(3):
        nvml.clock.now += 0.2
        gateway.read_fast()
        gateway.read_slow()
    requested = {field_id for request in gpu.field_requests for field_id, _ in request}
    assert requested == {FI_TX, FI_RX}


# --- slow reads: GPM and the PCIe call ----------------------------------------------------------

GPM_VALUES = {
    SM_UTIL: 96.0,
    SM_OCCUPANCY: 40.5,
    ANY_TENSOR_UTIL: 93.0,
    DRAM_BW_UTIL: 17.0,
    PCIE_TX_PER_SEC: 56_800.0,
    PCIE_RX_PER_SEC: 56_100.0,
    NVLINK_TX_PER_SEC: 300_000.0,
    NVLINK_RX_PER_SEC: 200_000.0,
}


def test_pcie_call_where_gpm_is_missing_converts_kb_per_second() -> None:
    gpu = FakeGpu(pcie_kbps=(58_600_000, 60_000_000))
    gateway, _ = opened(gpu)
    values = gateway.read_slow()[0]
    assert (values["pcie_tx"], values["pcie_rx"]) == (58.6e9, 60.0e9)
    assert gpu.calls["nvmlDeviceGetPcieThroughput"] == 2


def test_gpm_samples_at_least_100_ms_apart_and_reuses_the_previous_one() -> None:
    gpu = FakeGpu(gpm=True, gpm_values=GPM_VALUES)
    gateway, nvml = opened(gpu)
    first = gateway.read_slow()[0]
    assert "sm_active" not in first and "pcie_tx" not in first  # a GPM sample stands alone
    nvml.clock.now += GPM_STEP / 2
    assert gateway.read_slow() == {}  # nothing due half a GPM interval on
    assert gpu.calls["nvmlGpmSampleGet"] == 1
    nvml.clock.now += GPM_STEP / 2
    values = gateway.read_slow()[0]
    gpm = {
        "sm_active": 96.0,
        "sm_occupancy": 40.5,
        "tensor_active": 93.0,
        "dram_active": 17.0,
        "pcie_tx": 56.8e9,  # MB/s -> B/s
        "pcie_rx": 56.1e9,
    }
    assert {name: values.get(name) for name in gpm} == gpm
    for _ in range(5):
        nvml.clock.now += SLOW_INTERVALS["gpm"]
        assert gateway.read_slow()[0]["tensor_active"] == 93.0
    assert gpu.calls["nvmlGpmSampleGet"] == 7  # one per slow tick that sampled
    assert len(nvml.allocated) == 2
    assert min(gpu.gpm_spans) >= 0.1
    assert gpu.calls["nvmlDeviceGetPcieThroughput"] == 0  # GPM gives PCIe here
    gateway.close()
    assert sorted(map(id, nvml.freed)) == sorted(map(id, nvml.allocated))


def test_gpm_metric_not_supported_is_dropped_and_pcie_falls_back() -> None:
    gpu = FakeGpu(
        gpm=True,
        gpm_values=GPM_VALUES,
        gpm_unsupported={PCIE_TX_PER_SEC, PCIE_RX_PER_SEC},
        pcie_kbps=(1000, 2000),
    )
    gateway, nvml = opened(gpu)
    gateway.read_slow()
    nvml.clock.now += GPM_STEP
    first = gateway.read_slow()[0]
    assert first["sm_active"] == 96.0
    nvml.clock.now += GPM_STEP
    second = gateway.read_slow()[0]
    assert (second["pcie_tx"], second["pcie_rx"]) == (1e6, 2e6)
    assert PCIE_TX_PER_SEC not in gpu.gpm_requests[-1]


def test_nvlink_from_gpm_where_links_exist_and_never_where_they_do_not() -> None:
    linked = FakeGpu(links=[1, 1], gpm=True, gpm_values=GPM_VALUES)
    single = FakeGpu(gpm=True, gpm_values=GPM_VALUES)
    gateway, nvml = opened(linked, single)
    gateway.read_slow()
    nvml.clock.now += GPM_STEP
    slow = gateway.read_slow()
    assert slow[0]["nvlink_tx"] == 300e9 and slow[0]["nvlink_rx"] == 200e9
    assert "nvlink_tx" not in slow[1]
    assert NVLINK_TX_PER_SEC not in single.gpm_requests[-1]
    # GPM covers NVLink in the same call, so the costly field counters are not read.
    assert linked.calls["nvmlDeviceGetFieldValues"] == 0


def test_gpm_sample_error_keeps_the_previous_sample() -> None:
    gpu = FakeGpu(gpm=True, gpm_values=GPM_VALUES)
    gateway, nvml = opened(gpu)
    gateway.read_slow()
    nvml.clock.now += GPM_STEP
    gpu.faults_once["nvmlGpmSampleGet"] = NVMLError_Timeout()
    assert "sm_active" not in gateway.read_slow().get(0, {})
    nvml.clock.now += GPM_STEP
    assert gateway.read_slow()[0]["sm_active"] == 96.0
    assert gpu.gpm_spans == [pytest.approx(2 * GPM_STEP)]  # from the sample before the error


# --- processes ----------------------------------------------------------------------------


def test_compute_processes_every_two_seconds_with_their_memory() -> None:
    busy = FakeGpu(processes=[(4242, 70 * 2**30), (4343, None)])
    idle = FakeGpu(uuid="GPU-1")
    gateway, nvml = opened(busy, idle)
    found = gateway.read_processes()
    assert found == {0: [GpuProcess(4242, 70 * 2**30), GpuProcess(4343, None)], 1: []}
    nvml.clock.now += 1.0
    assert gateway.read_processes() == {}  # not due yet: nothing asked
    assert busy.calls["nvmlDeviceGetComputeRunningProcesses"] == 1
    nvml.clock.now += SLOW_INTERVALS["processes"]
    assert gateway.read_processes()[0][0].pid == 4242


def test_processes_not_supported_are_never_asked_again_and_a_lost_gpu_is_lost() -> None:
    unsupported = FakeGpu(faults={"nvmlDeviceGetComputeRunningProcesses": NVMLError_NotSupported()})
    lost = FakeGpu(
        uuid="GPU-1", faults={"nvmlDeviceGetComputeRunningProcesses": NVMLError_GpuIsLost()}
    )
    gateway, nvml = opened(unsupported, lost)
    for _ in range(3):
        assert gateway.read_processes() == {}
        nvml.clock.now += SLOW_INTERVALS["processes"]
    assert unsupported.calls["nvmlDeviceGetComputeRunningProcesses"] == 1
    assert [sample.state for sample in gateway.read_fast()] == ["ok", "lost"]


def test_every_field_the_reads_fill_has_one_spec_and_every_health_field_a_read() -> None:
    """The reads (nvml_reads.py) name fields; their specs (protocol/fields.py) say the rest:
    a read of a field without a spec, or a health field nothing reads, is a field half added."""
    from dltui.protocol.fields import GPM_WINDOW
    from dltui.telemetry.nvml_reads import FAST_READS, GPM_METRICS, HEALTH_GROUPS, SIMPLE_READS

    read = {name for fast in FAST_READS.values() for name in fast.fields}
    read |= set(SIMPLE_READS) | set(GPM_METRICS)
    read |= {name for names in HEALTH_GROUPS.values() for name in names}
    read |= {"nvlink_tx_bytes", "nvlink_rx_bytes"}  # the NVLink counters' totals (nvml.py)
    assert read == set(GPU_FIELDS)
    assert {name for name, spec in GPU_FIELDS.items() if spec.health} <= read
    assert {GPU_FIELDS[name].window for name in GPM_METRICS} == {GPM_WINDOW}
    assert SLOW_INTERVALS["gpm"] == GPM_WINDOW  # what a GPM figure averages over
