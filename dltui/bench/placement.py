"""Where on this server's wiring a benchmark runs: the GPUs a scale-up run's ranks use, and the
link a copy crosses.

The worker reads the topology here as the agent's inventory does (the same read, the same
answers), so the GPU set `dltui.plans.placement.choose` picks is the one the launcher named.
Ranks are placed by CUDA_VISIBLE_DEVICES, with UUIDs: CUDA numbers GPUs its own way (fastest
first, unless told otherwise), NVML by PCI address, and a UUID is the same to both.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, replace

from dltui.bench.ranks import R
from dltui.bench.shapes import BandwidthCase
from dltui.plans.placement import choose
from dltui.plans.topology import link, pcie_gbps, pcie_text
from dltui.protocol.bench_results import KernelResult
from dltui.protocol.inventory import Inventory
from dltui.telemetry.inventory import build_inventory
from dltui.telemetry.nvml import NvmlGateway


@dataclass(frozen=True, slots=True)
class Placement:
    env: dict[str, str]
    """What the ranks' environment needs: CUDA_VISIBLE_DEVICES, the set's UUIDs in rank order."""
    gpus: list[int]
    """NVML indices, in rank order."""
    words: str

    def mark(self, on_result: Callable[[R], object]) -> Callable[[R], None]:
        """`on_result`, with each result saying where its ranks ran."""

        def marked(result: R) -> None:
            on_result(replace(result, gpu_set=self.gpus, placement=self.words))

        return marked


@functools.cache
def here() -> Inventory:
    """This server's inventory, read once per worker."""
    gateway = NvmlGateway()
    try:
        return build_inventory(gateway)
    finally:
        gateway.close()


def place(count: int) -> Placement | None:
    """Where `count` ranks go (0: every GPU), chosen from the topology; None where NVML sees no
    GPU or cannot name them. A CUDA_VISIBLE_DEVICES the agent was started with is kept: its
    user chose the GPUs."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given is not None:
        return Placement({}, [], f"the GPUs CUDA_VISIBLE_DEVICES={given} gives the agent")
    inventory = here()
    if not inventory.gpus:
        return None
    chosen = choose(inventory, count or len(inventory.gpus))
    uuids = {gpu.index: gpu.uuid for gpu in inventory.gpus}
    if not all(uuids[index] for index in chosen.gpus):
        return None
    order = ",".join(uuids[index] for index in chosen.gpus)
    return Placement({"CUDA_VISIBLE_DEVICES": order}, chosen.gpus, chosen.words)


def nvml_indices(uuids: list[str]) -> list[int | None]:
    """The NVML index of each GPU a framework sees, by its UUID ("GPU-…" or bare)."""
    by_uuid = {gpu.uuid.removeprefix("GPU-").lower(): gpu.index for gpu in here().gpus}
    return [by_uuid.get(uuid.removeprefix("GPU-").lower()) for uuid in uuids]


def copy_link(result: KernelResult, case: BandwidthCase, nvml: list[int | None]) -> KernelResult:
    """A copy's result with the GPUs it used (NVML's numbers) and, for a peer copy or a copy to
    or from the host, the link it crossed and that link's nominal rate. `nvml` maps the
    framework's GPU numbers to NVML's."""
    if case.on_host:
        return result
    inventory = here()
    src, dst = (nvml[i] if i < len(nvml) else None for i in (case.src, case.dst))
    if src is None or dst is None:
        return result
    if case.direction == "p2p" and inventory.topology is not None:
        found = link(inventory.topology, inventory.gpus, src, dst)
        return replace(
            result, gpu_set=[src, dst], link=found.label, nominal_gbps=found.nominal_gbps
        )
    gpu = next((gpu for gpu in inventory.gpus if gpu.index == src), None)
    if case.direction in ("h2d", "d2h") and gpu is not None:
        return replace(result, gpu_set=[src], link=f"PCIe {pcie_text(gpu)}",
                       nominal_gbps=pcie_gbps(gpu))  # fmt: skip
    return replace(result, gpu_set=[src])
