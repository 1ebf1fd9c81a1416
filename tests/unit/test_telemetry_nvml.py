"""The NVML gateway against a fake pynvml: support detection, errors, lost GPUs, units, rates."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from dltui.protocol.fields import GPU_FIELDS
from dltui.protocol.samples import GpuProcess
from dltui.telemetry.nvml import NvmlGateway
from dltui.telemetry.nvml_reads import ALL_LINKS, FAST_INTERVALS, JOB_INTERVALS, SLOW_INTERVALS
from tests.fakes.nvml import (
    ANY_TENSOR_UTIL,
    DRAM_BW_UTIL,
    FI_RX,
    FI_TX,
    NVLINK_RX_PER_SEC,
    NVLINK_TX_PER_SEC,
    PCIE_RX_PER_SEC,
    PCIE_TX_PER_SEC,
    SM_OCCUPANCY,
    SM_UTIL,
    FakeGpu,
    FakeNvml,
    FakeNvmlWithC,
    NVMLError,
    NVMLError_DriverNotLoaded,
    NVMLError_FunctionNotFound,
    NVMLError_GpuIsLost,
    NVMLError_LibraryNotFound,
    NVMLError_NotSupported,
    NVMLError_Timeout,
    NVMLError_Uninitialized,
    NVMLError_Unknown,
)
from tests.fakes.scheduled import ScheduledGateway

GPM_STEP = SLOW_INTERVALS["gpm"]
"""How often GPM, and the NVLink and PCIe fallbacks, are read."""

BOTH_WAYS = pytest.mark.parametrize("c_functions", [False, True], ids=["functions", "c-functions"])
"""The cheap reads through a fake NVML module's functions, and through pynvml's C functions."""


def opened(
    *gpus: FakeGpu, c_functions: bool = False, **options: Any
) -> tuple[ScheduledGateway, FakeNvml]:
    nvml = (FakeNvmlWithC if c_functions else FakeNvml)(list(gpus) or [FakeGpu()], **options)
    gateway = ScheduledGateway(nvml, nvml.clock)
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
