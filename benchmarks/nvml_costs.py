"""What each NVML read costs on this machine, per call, on GPU 0.

The agent's fast tick may only hold reads of microseconds; anything slower belongs on the slow
thread. Drivers and machines differ (the energy counter took 3 ms on one H200 machine), so run
this on a new kind of machine before trusting the agent's overhead there.

    python benchmarks/nvml_costs.py [--calls 50]
"""

from __future__ import annotations

import argparse
import statistics
import time

import pynvml as nvml


def reads(handle) -> dict[str, tuple]:
    return {
        "utilization": (nvml.nvmlDeviceGetUtilizationRates, handle),
        "memory": (nvml.nvmlDeviceGetMemoryInfo, handle),
        "power": (nvml.nvmlDeviceGetPowerUsage, handle),
        "power limit": (nvml.nvmlDeviceGetEnforcedPowerLimit, handle),
        "energy": (nvml.nvmlDeviceGetTotalEnergyConsumption, handle),
        "temperature": (nvml.nvmlDeviceGetTemperature, handle, nvml.NVML_TEMPERATURE_GPU),
        "clock sm": (nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_SM),
        "clock mem": (nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_MEM),
        "ecc corrected": (
            nvml.nvmlDeviceGetTotalEccErrors,
            handle,
            nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED,
            nvml.NVML_VOLATILE_ECC,
        ),
        "throttle reasons": (nvml.nvmlDeviceGetCurrentClocksEventReasons, handle),
        "nvlink counters (field values)": (
            nvml.nvmlDeviceGetFieldValues,
            handle,
            [
                (nvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, 0xFFFFFFFF),
                (nvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, 0xFFFFFFFF),
            ],
        ),
        "pcie throughput (blocking)": (
            nvml.nvmlDeviceGetPcieThroughput,
            handle,
            nvml.NVML_PCIE_UTIL_TX_BYTES,
        ),
    }


def gpm_sample(handle):
    """One GPM sample taken and freed: the cost the slow thread pays per GPU per GPM read."""
    sample = nvml.nvmlGpmSampleAlloc()
    try:
        nvml.nvmlGpmSampleGet(handle, sample)
    finally:
        nvml.nvmlGpmSampleFree(sample)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    nvml.nvmlInit()
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    print(f"{nvml.nvmlDeviceGetName(handle)}, driver {nvml.nvmlSystemGetDriverVersion()}")
    results = []
    calls = reads(handle) | {"gpm sample (alloc, get, free)": (gpm_sample, handle)}
    for name, (function, *call_args) in calls.items():
        timings = []
        for _ in range(args.calls if "blocking" not in name else 5):
            began = time.perf_counter()
            try:
                function(*call_args)
            except nvml.NVMLError as exc:
                timings = []
                results.append((float("inf"), name, f"error: {exc}"))
                break
            timings.append(time.perf_counter() - began)
            time.sleep(0.01)  # spaced like a sampler's ticks, not back to back
        if timings:
            med = statistics.median(timings) * 1e6
            results.append((med, name, f"median {med:9.1f} µs   max {max(timings) * 1e6:9.1f} µs"))
    for _, name, text in sorted(results):
        print(f"  {name:32} {text}")
    nvml.nvmlShutdown()


if __name__ == "__main__":
    main()
