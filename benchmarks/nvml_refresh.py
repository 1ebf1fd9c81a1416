"""How often each value the agent reads every tick changes at its source, on GPU 0.

Reading a value faster than the driver refreshes it costs a call and brings nothing new. This
polls each fast read back to back (a few µs a call that way) while a child process runs a bf16
GEMM that turns on and off every `--period / 2` seconds, allocating 2 GiB as it turns on and
freeing it as it turns off, and reports how often each value changed. It also reads the
driver's own sample buffers (`nvmlDeviceGetSamples`), whose timestamps show how often the
driver itself samples power, utilization and the SM clock.

    python benchmarks/nvml_refresh.py [--seconds 8] [--period 0.5]
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing as mp
import statistics
import time
from collections.abc import Callable

import pynvml as nvml


def square_wave(period: float, seconds: float, ready: mp.synchronize.Event) -> None:
    """GEMMs for half of each period, idle for the other half, until `seconds` have passed."""
    import torch

    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn_like(a)
    (a @ b).sum().item()
    ready.set()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        block = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
        on_until = time.monotonic() + period / 2
        while time.monotonic() < on_until:
            (a @ b).sum().item()
        del block
        torch.cuda.empty_cache()
        time.sleep(period / 2)


def fast_reads(handle) -> dict[str, Callable[[], object]]:
    def power_field(field: int) -> Callable[[], object]:
        return lambda: nvml.nvmlDeviceGetFieldValues(handle, [field])[0].value.uiVal

    return {
        "memory used": lambda: nvml.nvmlDeviceGetMemoryInfo(handle).used,
        "utilization (gpu, memory)": lambda: (
            (u := nvml.nvmlDeviceGetUtilizationRates(handle)).gpu,
            u.memory,
        ),
        "power (nvmlDeviceGetPowerUsage)": lambda: nvml.nvmlDeviceGetPowerUsage(handle),
        "power, instant field": power_field(nvml.NVML_FI_DEV_POWER_INSTANT),
        "power, average field": power_field(nvml.NVML_FI_DEV_POWER_AVERAGE),
        "temperature": lambda: nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU),
        "SM clock": lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),
        "throttle reasons": lambda: nvml.nvmlDeviceGetCurrentClocksEventReasons(handle),
    }


def poll(reads: dict[str, Callable[[], object]], seconds: float) -> dict[str, list[float]]:
    """Each read's change times (monotonic), polling all of them round robin."""
    last: dict[str, object] = {}
    changes: dict[str, list[float]] = {name: [] for name in reads}
    live = dict(reads)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for name, read in list(live.items()):
            try:
                value = read()
            except nvml.NVMLError as exc:
                print(f"  {name}: {exc}")
                del live[name]
                continue
            if name in last and value != last[name]:
                changes[name].append(time.monotonic())
            last[name] = value
    return changes


def describe(times: list[float], seconds: float) -> str:
    if len(times) < 2:
        return f"{len(times)} changes in {seconds:g} s"
    gaps = sorted(1000 * (b - a) for a, b in itertools.pairwise(times))
    tenth = gaps[len(gaps) // 10]
    ninth = gaps[(9 * len(gaps)) // 10]
    return (
        f"{len(times):5d} changes, {len(times) / seconds:6.1f}/s; between changes: median "
        f"{statistics.median(gaps):7.1f} ms (p10 {tenth:.1f}, p90 {ninth:.1f})"
    )


def driver_buffers(handle, since_us: int) -> None:
    kinds = {
        "power": nvml.NVML_TOTAL_POWER_SAMPLES,
        "gpu utilization": nvml.NVML_GPU_UTILIZATION_SAMPLES,
        "memory utilization": nvml.NVML_MEMORY_UTILIZATION_SAMPLES,
        "SM clock": nvml.NVML_PROCESSOR_CLK_SAMPLES,
    }
    for name, kind in kinds.items():
        began = time.perf_counter()
        try:
            _, samples = nvml.nvmlDeviceGetSamples(handle, kind, since_us)
        except nvml.NVMLError as exc:
            print(f"  {name:28} {exc}")
            continue
        cost = (time.perf_counter() - began) * 1e6
        stamps = sorted(s.timeStamp for s in samples)
        gaps = [(b - a) / 1000 for a, b in itertools.pairwise(stamps)]
        spacing = f"every {statistics.median(gaps):.1f} ms (median)" if gaps else ""
        print(f"  {name:28} {len(samples):4d} samples {spacing}; the call {cost:.0f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--period", type=float, default=0.5)
    args = parser.parse_args()
    nvml.nvmlInit()
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    print(f"{nvml.nvmlDeviceGetName(handle)}, driver {nvml.nvmlSystemGetDriverVersion()}")
    context = mp.get_context("spawn")
    ready = context.Event()
    load = context.Process(target=square_wave, args=(args.period, args.seconds + 2, ready))
    load.start()
    ready.wait(120)
    since_us = int(time.time() * 1e6)
    print(f"polled back to back for {args.seconds:g} s, the load on and off every "
          f"{args.period / 2:g} s:")  # fmt: skip
    for name, times in poll(fast_reads(handle), args.seconds).items():
        print(f"  {name:32} {describe(times, args.seconds)}")
    print("the driver's sample buffers over the same span:")
    driver_buffers(handle, since_us)
    load.join()
    nvml.nvmlShutdown()


if __name__ == "__main__":
    main()
