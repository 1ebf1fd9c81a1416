"""A GPU server's frames as its agent would send them, made up: any number of GPUs, a few
minutes of samples with a load that comes and goes, for screens at sizes no recording has
(eight GPUs at 80×24, an offline server beside a live one)."""

from __future__ import annotations

import math

from dltui.protocol.inventory import GpuInfo, Inventory
from dltui.protocol.messages import ConnectionState, JobProgress, Message, Sample, Welcome
from dltui.protocol.samples import GpuSample, HostSample

GIB = 2**30


def inventory(hostname: str, gpus: int, cores: int = 32) -> Inventory:
    info = [
        GpuInfo(i, "NVIDIA H200", f"GPU-{i}", 141 * GIB, 5, 16, 5, 16, nvlink_links=18, gpm=True)
        for i in range(gpus)
    ]
    return Inventory(hostname, "Linux", "Xeon", cores, 512 * GIB, info, "550.54", "12.4")


def gpu_values(index: int, t: float) -> dict[str, float]:
    """A training-like load: busy stretches, each GPU a little out of step."""
    busy = 0.5 + 0.5 * math.sin(t / 20 + index * 0.4)
    return {
        "util_gpu": round(100 * busy),
        "mem_used": (20 + 60 * busy) * GIB,
        "mem_total": 141 * GIB,
        "power": 90 + 600 * busy,
        "power_limit": 700.0,
        "temp": 35 + 30 * busy,
        "clock_sm": 345 + 1635 * min(busy * 1.5, 1.0),
        "clock_sm_max": 1980.0,
        "throttle": 0x4 if busy > 0.9 else 0x1 if busy < 0.05 else 0,
        "tensor_active": 90 * busy,
        "pcie_tx": 5e9 * busy,
        "pcie_rx": 2e9 * busy,
        "nvlink_tx": 250e9 * busy,
        "nvlink_rx": 240e9 * busy,
    }


def server_messages(
    hostname: str,
    gpus: int,
    start: float,
    seconds: float = 180.0,
    rate: float = 2.0,
    cores: int = 32,
) -> list[Message]:
    """Its welcome, a live link, `seconds` of samples at `rate` Hz from `start`, and a job
    running a benchmark case."""
    messages: list[Message] = [
        Welcome(f"agent-{hostname}", inventory(hostname, gpus, cores), rate, start, 1.0),
        ConnectionState("live", start, rtt=0.0004, offset=0.0),
    ]
    ticks = int(seconds * rate)
    for tick in range(ticks):
        t = start + tick / rate
        per_core = [50 + 40 * math.sin(t / 7 + core) for core in range(cores)]
        host = HostSample(
            {
                "cpu": sum(per_core) / cores,
                "mem_used": 100 * GIB,
                "mem_total": 512 * GIB,
                "load1": 4.0,
                "load5": 3.5,
                "load15": 3.0,
                "net_rx": 2e6,
                "net_tx": 1e6,
                "disk_read": 0.0,
                "disk_write": 5e5,
            },
            per_core,
        )
        samples = [GpuSample(i, "ok", gpu_values(i, t)) for i in range(gpus)]
        messages.append(Sample(tick, t, t, host, samples))
        if tick == ticks - int(30 * rate):
            messages.append(JobProgress("job1", 9, 60, "gemm bf16 5124x9124x1760 NN fwd"))
    return messages
