"""The NVML gateway on a real GPU, checked against loads whose size we know.

Skipped where NVML cannot start or sees no GPU. The load tests need PyTorch with CUDA.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import pytest

from dltui.protocol.messages import Sample
from dltui.telemetry.nvml import NvmlGateway
from dltui.telemetry.nvml_reads import SLOW_INTERVALS
from tests.gpu.recorder import Recorder, torch_cuda

pytestmark = pytest.mark.gpu

CHEAP_FIELDS = ("util_gpu", "power", "mem_used", "temp", "clock_sm")


def _nvml_index_of_cuda0(torch, gateway: NvmlGateway) -> int:
    """NVML and CUDA may number GPUs differently; match cuda:0 by UUID."""
    uuid = str(getattr(torch.cuda.get_device_properties(0), "uuid", ""))
    for gpu in gateway.gpus:
        if uuid and gpu.uuid.removeprefix("GPU-") == uuid.removeprefix("GPU-"):
            return gpu.index
    return 0


def _span(seconds: float) -> Callable[[list[Sample]], bool]:
    return lambda samples: len(samples) > 1 and samples[-1].mono - samples[0].mono >= seconds


def test_cheap_fields_are_present(gateway: NvmlGateway) -> None:
    for sample in gateway.read_fast():
        assert sample.state == "ok"
        assert sample.errors == {}
        for name in CHEAP_FIELDS:
            assert name in sample.values, name
        assert 10 < sample.values["power"] < 1500
        assert 0 < sample.values["mem_used"] <= sample.values["mem_total"]


def test_the_prepared_reads_agree_with_pynvmls_functions(gateway: NvmlGateway) -> None:
    """The fast reads call NVML's C functions themselves (nvml_fast.py): the same answers."""
    import pynvml

    before = gateway.read_fast()
    for index, sample in enumerate(gateway.read_fast()):
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
        assert sample.values["mem_total"] == memory.total
        assert abs(sample.values["mem_used"] - memory.used) <= 0.01 * memory.total
        util = pynvml.nvmlDeviceGetUtilizationRates(handle)
        assert 0 <= sample.values["util_gpu"] <= 100 and 0 <= sample.values["util_mem"] <= 100
        assert abs(sample.values["util_gpu"] - util.gpu) <= 50  # refreshes every 200 ms
        temp = pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU)
        assert abs(sample.values["temp"] - temp) <= 2
        power = pynvml.nvmlDeviceGetPowerUsage(handle) / 1000
        assert abs(sample.values["power"] - power) <= max(30.0, 0.3 * power)
        clock = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
        highest = max(clock, before[index].values["clock_sm"])
        assert 0 < sample.values["clock_sm"] <= 1.2 * highest
        mask = sample.values["throttle"]  # a mask of the reasons nvml.h defines, all below 2**16
        assert mask == int(mask) and 0 <= mask < 2**16


def test_a_fast_read_is_cheap(gateway: NvmlGateway) -> None:
    gateway.read_fast()  # support detection happens on the first read
    timings = []
    for _ in range(100):
        began = time.perf_counter()
        gateway.read_fast()
        timings.append(time.perf_counter() - began)
    per_gpu = statistics.median(timings) / gateway.count
    assert per_gpu < 0.0005, f"{per_gpu * 1e6:.0f} µs per GPU"


def test_inventory(gateway: NvmlGateway) -> None:
    assert gateway.driver_version and gateway.cuda_version
    for gpu in gateway.gpus:
        assert gpu.name and gpu.uuid.startswith("GPU-") and gpu.memory_total > 0
        assert gpu.pcie_gen and gpu.pcie_width


def test_slow_fields_arrive() -> None:
    with Recorder() as recorder:
        gpus = recorder.sampler.inventory.gpus
        if not gpus:
            pytest.skip("no GPU")

        def complete(samples: list[Sample]) -> bool:
            values = [gpu.values for gpu in samples[-1].gpus]
            return all(
                {"pcie_tx", "pcie_rx", "energy"} <= set(v)
                and (not info.gpm or {"sm_active", "tensor_active", "dram_active"} <= set(v))
                for info, v in zip(gpus, values, strict=True)
            )

        recorder.wait_for(complete)


def test_gemm_load_shows_in_utilization_tensor_activity_and_power(gateway: NvmlGateway) -> None:
    torch = torch_cuda()
    index = _nvml_index_of_cuda0(torch, gateway)
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    with Recorder() as recorder:
        recorder.wait_for(_span(1.0))
        idle_end = recorder.samples[-1].mono
        began = time.monotonic()
        products = 0
        while time.monotonic() - began < 3.0:
            a @ b
            products += 1
            if products % 20 == 0:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        ended = time.monotonic()
        recorder.wait_for(lambda s: s[-1].mono > ended)
    idle_power = statistics.median(recorder.between(0, idle_end, index, "power"))
    window = (began + SLOW_INTERVALS["gpm"] + 0.3, ended)  # the clocks and GPM settled
    util = statistics.median(recorder.between(*window, index, "util_gpu"))
    power = statistics.median(recorder.between(*window, index, "power"))
    print(f"GEMM: util {util}%, power {idle_power:.0f} W idle -> {power:.0f} W")
    assert util > 50
    assert power > idle_power + 50, (idle_power, power)
    if gateway.gpus[index].gpm:
        tensor = statistics.median(recorder.between(*window, index, "tensor_active"))
        print(f"GEMM: tensor active {tensor:.1f}%")
        assert tensor > 20


def test_pcie_rates_match_pinned_copies(gateway: NvmlGateway) -> None:
    """Host→device traffic is RX from the GPU's side, device→host is TX."""
    torch = torch_cuda()
    index = _nvml_index_of_cuda0(torch, gateway)
    size = 1 << 30
    host = torch.empty(size, dtype=torch.uint8, pin_memory=True)
    device = torch.empty(size, dtype=torch.uint8, device="cuda")
    device.copy_(host)
    torch.cuda.synchronize()
    with Recorder() as recorder:
        recorder.wait_for(lambda s: "pcie_rx" in s[-1].gpus[index].values)
        # A GPM rate averages over the interval before its read, taken on the slow thread's
        # turn: the samples from two intervals after the copies begin see only copies.
        settle = 2 * SLOW_INTERVALS["gpm"] + 0.3
        for name, copy in (
            ("pcie_rx", lambda: device.copy_(host)),
            ("pcie_tx", lambda: host.copy_(device)),
        ):
            began = time.monotonic()
            copies = 0
            while time.monotonic() - began < settle + 1.5:
                copy()  # pinned memory: synchronous for the host, back to back on the bus
                copies += 1
            torch.cuda.synchronize()
            ended = time.monotonic()
            measured = copies * size / (ended - began)
            seen = statistics.median(recorder.between(began + settle, ended, index, name))
            print(f"{name}: NVML {seen / 1e9:.1f} GB/s, copies {measured / 1e9:.1f} GB/s")
            assert seen == pytest.approx(measured, rel=0.10), (name, seen / 1e9, measured / 1e9)


def test_nvlink_rates_match_peer_copies(gateway: NvmlGateway) -> None:
    """GPU 0 → GPU 1 copies over NVLink show as TX on the sender and RX on the receiver."""
    torch = torch_cuda()
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    if not torch.cuda.can_device_access_peer(0, 1):
        pytest.skip("GPUs 0 and 1 cannot reach each other directly")
    uuids = [str(torch.cuda.get_device_properties(i).uuid).removeprefix("GPU-") for i in (0, 1)]
    by_uuid = {gpu.uuid.removeprefix("GPU-"): gpu for gpu in gateway.gpus}
    sender, receiver = (by_uuid[u] for u in uuids)
    if not sender.nvlink_links:
        pytest.skip("no active NVLink links")
    size = 1 << 30
    source = torch.empty(size, dtype=torch.uint8, device="cuda:0")
    target = torch.empty(size, dtype=torch.uint8, device="cuda:1")
    target.copy_(source)
    torch.cuda.synchronize(1)
    with Recorder() as recorder:
        recorder.wait_for(lambda s: "nvlink_tx" in s[-1].gpus[sender.index].values)
        began = time.monotonic()
        copies = 0
        while time.monotonic() - began < 2.0:
            for _ in range(4):
                target.copy_(source)
            copies += 4
            torch.cuda.synchronize(1)
        ended = time.monotonic()
        measured = copies * size / (ended - began)
        sent = statistics.median(recorder.between(began + 0.3, ended, sender.index, "nvlink_tx"))
        got = statistics.median(recorder.between(began + 0.3, ended, receiver.index, "nvlink_rx"))
    print(f"NVLink: copies {measured / 1e9:.1f} GB/s, tx {sent / 1e9:.1f}, rx {got / 1e9:.1f}")
    # NVLink counters include protocol overhead, so allow more above than below.
    assert 0.9 * measured <= sent <= 1.3 * measured
    assert 0.9 * measured <= got <= 1.3 * measured
