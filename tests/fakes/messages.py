"""Frames a fake agent would send: an inventory (of a fake box too), results of each kind. For
tests of whatever reads frames; test modules import them from here, never from one another."""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union

from dltui.protocol.bench_results import KernelResult
from dltui.protocol.framing import encode_frame
from dltui.protocol.inventory import GpuInfo, Inventory, MigInstance
from dltui.protocol.messages import MESSAGE_TYPES, ConnectionState, Sample, Welcome
from dltui.protocol.samples import GpuSample, HostSample
from dltui.protocol.wire import from_wire
from dltui.telemetry.nvml import NvmlGateway
from dltui.telemetry.topology import read_topology
from tests.fakes.boxes import Box, TopologyNvml, write_sysfs

INVENTORY = Inventory(
    hostname="gpu-01",
    os="Linux 6.8",
    cpu_model="Xeon",
    cpu_count=64,
    memory_total=2**40,
    gpus=[
        GpuInfo(0, "NVIDIA H200", "GPU-1", 141 * 2**30, 5, 16, 5, 16, 18, True),
        GpuInfo(
            1,
            "NVIDIA H200",
            "GPU-2",
            141 * 2**30,
            mig=True,
            mig_instances=[MigInstance("MIG-0d2a", 1, 0, "1g.18gb", 18 * 2**30, 16)],
        ),
    ],
    driver_version="580.159",
    cuda_version="13.0",
    frameworks={"torch": "2.11.0"},
)
RESULT = KernelResult(
    "gemm", "torch", "cuda:0", "bf16", "fwd", "5124x9124x2560 NN",
    {"m": 5124, "n": 9124, "k": 2560}, 400, 0.0011, 0.00002, 0.00108, tflops=217.4,
    reference_gpu="V100", reference_tflops=96.6, ratio=2.25,
)  # fmt: skip


def inventory_of(box: Box, tmp_path: Path, **faults: object) -> Inventory:
    """The box's inventory as its agent would take it: the fake NVML and the box's sysfs."""
    nvml = TopologyNvml(box)
    for gpu in nvml.gpus:
        gpu.faults.update(faults)
    gateway = NvmlGateway(nvml=nvml)
    gateway.open()
    topology = read_topology(gateway, write_sysfs(tmp_path / box.name, box))
    return Inventory("box", "linux", "cpu", 64, 2**40, gpus=gateway.gpus, topology=topology)


def p2p(src: int, dst: int, gbps: float, nbytes: int = 2**30) -> KernelResult:
    return KernelResult("bandwidth", "torch", "cuda:0", "", "p2p", f"p2p {src}→{dst}",
                        params={"bytes": nbytes, "src": src, "dst": dst}, gbps=gbps,
                        gpu_set=[src, dst])  # fmt: skip


def allreduce(ranks: int, busbw: float, placement: str, gpus: list[int]) -> KernelResult:
    nbytes = 4 * 64_500_000
    return KernelResult("allreduce", "torch", "cuda", "fp32", "allreduce",
                        f"64500000 floats ×{ranks}", params={"bytes": nbytes, "ranks": ranks},
                        median_s=0.001, gbps=busbw * ranks / (2 * (ranks - 1)), busbw_gbps=busbw,
                        gpu_set=gpus, placement=placement)  # fmt: skip


_SCALARS: dict[Any, Any] = {int: 1, float: 1.0, str: "x", bytes: b"x" * 32, bool: True}


def example(hint: Any) -> Any:
    """A valid value for a type hint, as it would be on the wire."""
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return example(next(a for a in typing.get_args(hint) if a is not type(None)))
    if origin is Literal:
        return typing.get_args(hint)[0]
    if origin is list:
        return [example(typing.get_args(hint)[0])]
    if origin is dict:
        return {"k": example(typing.get_args(hint)[1])}
    if dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        return {f.name: example(hints[f.name]) for f in dataclasses.fields(hint)}
    return _SCALARS[hint]


def example_frame(name: str) -> bytes:
    wire = {"type": name, **example(MESSAGE_TYPES[name])}
    from_wire(wire)  # the example itself is a valid message
    return encode_frame(wire)


GIB = 2**30


def gpu_box_messages(now: float) -> list:
    """A two-GPU server as its agent would describe it: GPU 1 has fallen off the bus."""
    gpus = [
        GpuInfo(0, "NVIDIA H200", "GPU-0", 141 * GIB, 5, 16, 5, 16, nvlink_links=18, gpm=True),
        GpuInfo(1, "NVIDIA H200", "GPU-1", 141 * GIB, 5, 16, 5, 16, nvlink_links=18, gpm=True),
    ]
    inventory = Inventory("gpubox", "Linux", "Xeon", 64, 512 * GIB, gpus, "550.54", "12.4")
    welcome = Welcome("agent-1", inventory, 10.0, now, 1.0)
    messages: list = [welcome, ConnectionState("live", now, rtt=0.0004, offset=0.0002)]
    for tick in range(30):
        busy = GpuSample(
            0,
            "ok",
            {
                "util_gpu": 50.0 + tick,
                "mem_used": 70 * GIB,
                "mem_total": 141 * GIB,
                "power": 600.0,
                "power_limit": 700.0,
                "temp": 61.0,
                "clock_sm": 1485.0,
                "throttle": 0x4,
                "pcie_tx": 5e9,
                "pcie_rx": 2e9,
                "nvlink_tx": 100e9,
                "nvlink_rx": 90e9,
                "tensor_active": 93.0,
            },
            {"ecc_corrected": "Unknown Error"},
        )
        lost = GpuSample(1, "lost", {})
        host = HostSample({"cpu": 12.0, "mem_used": 100 * GIB, "mem_total": 512 * GIB}, [10.0] * 64)
        messages.append(Sample(tick, now + tick / 10, 1.0 + tick / 10, host, [busy, lost]))
    return messages
