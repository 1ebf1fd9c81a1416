"""The topology: how the GPUs reach each other, the CPUs and the network, taken once at start.

The GPUs' side comes through the one NVML gateway (`NvmlGateway.call_or_unanswered`): each
GPU's PCI address, NUMA node, CPU affinity and NVLink ports (version, and whether each ends at a
GPU or an NVSwitch); for each pair, NVML's common-ancestor level and its P2P answers both ways. The
host's side (NUMA nodes, sockets, NICs, PCI paths) comes from sysfs (host_topology). A read NVML
cannot answer leaves its value absent and its reason in `Topology.unanswered`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from itertools import combinations
from pathlib import Path
from typing import Any

from dltui.protocol.topology import GpuPair, GpuPlacement, Nic, Topology
from dltui.telemetry import host_topology
from dltui.telemetry.host_topology import SYS, bus_id, cpu_list
from dltui.telemetry.nvml import NvmlGateway, Unanswered

# nvml.h's enums, by value. Not pynvml's constants: its NVML_P2P_CAPS_INDEX_READ is the tuple
# (0,), which ctypes refuses.
P2P_CAPS = {"read": 0, "write": 1, "nvlink": 2, "atomics": 3, "pci": 4}
P2P_STATUS = {
    0: "ok",
    1: "chipset not supported",
    2: "GPU not supported",
    3: "topology not supported",
    4: "disabled by regkey",
    5: "not supported",
    6: "unknown",
}
LEVELS = {0: "internal", 10: "single", 20: "multiple", 30: "hostbridge", 40: "node", 50: "system"}
"""nvmlGpuTopologyLevel_t, by value, in the words Topology uses."""
NVLINK_TO_SWITCH = 2  # nvmlIntNvLinkDeviceType_t: NVML_NVLINK_DEVICE_TYPE_SWITCH
AFFINITY_WORD_BITS = 64  # nvmlDeviceGetCpuAffinity fills an array of 64-bit words


@dataclass
class _Reader:
    gateway: NvmlGateway
    sys: Path
    unanswered: dict[str, str] = field(default_factory=dict)

    def call_or_none(self, name: str, *args: Any) -> Any:
        """NVML's answer, or None with the reason kept (the first one per function)."""
        try:
            return self.gateway.call_or_unanswered(name, *args)
        except Unanswered as exc:
            self.unanswered.setdefault(name, str(exc))
            return None

    def gpu(self, index: int) -> tuple[GpuPlacement, list[str]]:
        """Where the GPU sits, and the PCI addresses its NVLink links lead to (GPUs only)."""
        opened = self.gateway.opened(index)
        if opened is None:
            return GpuPlacement(index), []
        handle, links = opened
        pci = self.call_or_none("nvmlDeviceGetPciInfo", handle)
        bus = bus_id(_text(pci.busId)) if pci is not None else None
        numa = self.call_or_none("nvmlDeviceGetNumaNodeId", handle)
        numa = numa if isinstance(numa, int) and numa >= 0 else None
        words = -(-(os.cpu_count() or 1) // AFFINITY_WORD_BITS)
        masks = self.call_or_none("nvmlDeviceGetCpuAffinity", handle, words)
        affinity = _mask_cpus(masks) if masks is not None else None
        if bus is not None:  # the kernel's own answer where NVML has none
            numa = numa if numa is not None else host_topology.device_numa_node(self.sys, bus)
            affinity = affinity or host_topology.device_cpus(self.sys, bus)
        versions = {self.call_or_none("nvmlDeviceGetNvLinkVersion", handle, link) for link in links}
        versions.discard(None)
        switch_links, peers = 0, []
        for link in links:
            if (
                self.call_or_none("nvmlDeviceGetNvLinkRemoteDeviceType", handle, link)
                == NVLINK_TO_SWITCH
            ):
                switch_links += 1
                continue
            remote = self.call_or_none("nvmlDeviceGetNvLinkRemotePciInfo", handle, link)
            if remote is not None:
                peers.append(bus_id(_text(remote.busId)))
        placement = GpuPlacement(
            index=index,
            pci_bus_id=bus,
            pci_path=host_topology.device_pci_path(self.sys, bus) if bus else [],
            numa_node=numa,
            cpu_affinity=affinity,
            nvlink_version=versions.pop() if len(versions) == 1 else None,
            nvswitch_links=switch_links,
        )
        return placement, peers

    def pair(self, a: GpuPlacement, b: GpuPlacement, a_peers: list[str]) -> GpuPair:
        opened_a, opened_b = self.gateway.opened(a.index), self.gateway.opened(b.index)
        if opened_a is None or opened_b is None:
            return GpuPair(a.index, b.index)
        first, second = opened_a[0], opened_b[0]
        level = self.call_or_none("nvmlDeviceGetTopologyCommonAncestor", first, second)
        return GpuPair(
            a=a.index,
            b=b.index,
            path=LEVELS.get(level, f"level {level}") if level is not None else None,
            nvlinks=a_peers.count(b.pci_bus_id) if b.pci_bus_id else 0,
            p2p=self.p2p(first, second),
            p2p_back=self.p2p(second, first),
        )

    def p2p(self, source: Any, target: Any) -> dict[str, str]:
        found = {}
        for capability, code in P2P_CAPS.items():
            status = self.call_or_none("nvmlDeviceGetP2PStatus", source, target, code)
            if status is not None:
                found[capability] = P2P_STATUS.get(status, f"status {status}")
        return found


def read_topology(gateway: NvmlGateway, sys: Path = SYS) -> Topology:
    """The whole topology of this machine; `gateway` must be open."""
    reader = _Reader(gateway, sys)
    read = [reader.gpu(index) for index in range(gateway.count)]
    gpus = [placement for placement, _ in read]
    pairs = [reader.pair(gpus[a], gpus[b], read[a][1])
             for a, b in combinations(range(len(gpus)), 2)]  # fmt: skip
    nodes = host_topology.numa_nodes(sys)
    sockets, cores = host_topology.sockets_and_cores(sys)
    nics = [_with_gpu_paths(nic, gpus, single_node=len(nodes) <= 1)
            for nic in host_topology.nics(sys)]  # fmt: skip
    return Topology(gpus, pairs, nodes, sockets, cores, nics, reader.unanswered)


def _with_gpu_paths(nic: Nic, gpus: list[GpuPlacement], single_node: bool) -> Nic:
    paths = [
        host_topology.pci_relation(
            nic.pci_path, gpu.pci_path, (nic.numa_node, gpu.numa_node), single_node
        )
        for gpu in gpus
    ]
    return replace(nic, gpu_paths=paths)


def _mask_cpus(masks: Any) -> str | None:
    """CPU affinity words (CPU 0 is bit 0 of the first) as a CPU list; None if empty."""
    cpus = [
        word * AFFINITY_WORD_BITS + bit
        for word, mask in enumerate(masks)
        for bit in range(AFFINITY_WORD_BITS)
        if int(mask) >> bit & 1
    ]
    return cpu_list(cpus) or None


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
