"""Two 8-GPU servers wired as real ones are, for the fake NVML and a fake sysfs tree alike.

- `nvlink_box()`: eight NVLink 4.0 GPUs, 18 links each to NVSwitches (a DGX H100 or H200),
  two sockets of two PCIe root complexes each, every GPU behind its own PCIe switch with an
  InfiniBand NIC beside it.
- `pcie_box()`: eight PCIe GPUs, no NVLink, two sockets with two PCIe switches each and two
  GPUs per switch; a 100 GbE NIC on each socket's second switch; one GPU trained at x8 in an
  x16 slot. P2P works within a socket only.
- `bridged_pair()`: two PCIe GPUs on one switch joined by an NVLink bridge of four links.

A `Box` says what NVML answers (`TopologyNvml`) and what sysfs holds (`write_sysfs`), from one
description, so the tests check the agent's reading of both against a known answer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tests.fakes.nvml import FakeGpu, FakeNvml

SINGLE, MULTIPLE, HOSTBRIDGE, NODE, SYSTEM = 10, 20, 30, 40, 50  # nvmlGpuTopologyLevel_t
OK, CHIPSET, TOPOLOGY, NOT_SUPPORTED = 0, 1, 3, 5  # nvmlGpuP2PStatus_t
TO_GPU, TO_SWITCH = 0, 2  # nvmlIntNvLinkDeviceType_t
CORES_PER_SOCKET, THREADS_PER_CORE = 16, 2
NODE_MEMORY = 512 * 2**30


@dataclass(frozen=True)
class FakeNic:
    name: str
    path: list[str]
    numa: int
    speed_mbps: int
    rdma: tuple[str, str, str] | None = None
    """(device, link layer, rate) where the NIC does RDMA."""


@dataclass
class Box:
    name: str
    gpu_paths: list[list[str]]
    """Each GPU's PCI path from its root complex, as sysfs links it."""
    numa: list[int]
    """Each GPU's NUMA node (= socket)."""
    switch: list[int]
    """Each GPU's PCIe switch."""
    root: list[str]
    """Each GPU's root complex."""
    nvlink_to_switch: int = 0
    """Links per GPU to NVSwitches (0: no NVLink)."""
    bridge_links: int = 0
    """Links from GPU 0 straight to GPU 1 (an NVLink bridge)."""
    nvlink_version: int = 6
    p2p: dict[str, int] = field(default_factory=dict)
    """Capability -> status within a socket; across sockets, `p2p_across`."""
    p2p_across: dict[str, int] = field(default_factory=dict)
    widths: dict[int, int] = field(default_factory=dict)
    """GPUs trained below x16."""
    nics: list[FakeNic] = field(default_factory=list)

    @property
    def sockets(self) -> int:
        return max(self.numa) + 1

    def level(self, a: int, b: int) -> int:
        """What NVML says of the path between GPUs a and b."""
        if self.switch[a] == self.switch[b]:
            return SINGLE
        if self.root[a] == self.root[b]:
            return HOSTBRIDGE
        return NODE if self.numa[a] == self.numa[b] else SYSTEM

    def bus_id(self, gpu: int) -> str:
        return self.gpu_paths[gpu][-1]

    def cpus(self, node: int) -> list[int]:
        per_socket = CORES_PER_SOCKET * THREADS_PER_CORE
        return list(range(node * per_socket, (node + 1) * per_socket))

    def fake_gpus(self) -> list[FakeGpu]:
        links = [1] * (self.nvlink_to_switch or self.bridge_links)
        count = len(self.gpu_paths)
        return [FakeGpu(uuid=f"GPU-{self.name}-{i}", links=list(links)) for i in range(count)]


def _switch(root: str, port: int, base: int, endpoints: int) -> list[list[str]]:
    """The paths of `endpoints` devices behind one PCIe switch on root port `port`."""
    bus = int(root[-2:], 16)
    root_port = f"0000:{bus:02x}:{port:02x}.0"
    upstream = f"0000:{base:02x}:00.0"
    return [
        [
            root,
            root_port,
            upstream,
            f"0000:{base + 1:02x}:{i:02x}.0",
            f"0000:{base + 2 + i:02x}:00.0",
        ]
        for i in range(endpoints)
    ]


def nvlink_box() -> Box:
    roots = ["pci0000:00", "pci0000:20", "pci0000:80", "pci0000:a0"]
    paths, nics = [], []
    for gpu in range(8):
        root = roots[gpu // 2]
        gpu_path, nic_path = _switch(root, 1 + gpu % 2, int(root[-2:], 16) + 1 + 8 * (gpu % 2), 2)
        paths.append(gpu_path)
        rdma = (f"mlx5_{gpu}", "InfiniBand", "400 Gb/sec (4X NDR)")
        nics.append(FakeNic(f"ibp{gpu}s0", nic_path, gpu // 4, 400_000, rdma))
    return Box(
        name="nvlink",
        gpu_paths=paths,
        numa=[gpu // 4 for gpu in range(8)],
        switch=list(range(8)),
        root=[roots[gpu // 2] for gpu in range(8)],
        nvlink_to_switch=18,
        p2p={"read": OK, "write": OK, "nvlink": OK, "atomics": OK, "pci": OK},
        p2p_across={"read": OK, "write": OK, "nvlink": OK, "atomics": OK, "pci": OK},
        nics=nics,
    )


def pcie_box() -> Box:
    roots = ["pci0000:00", "pci0000:80"]
    paths, nics = [], []
    for switch in range(4):
        root = roots[switch // 2]
        behind = _switch(root, 1 + switch % 2, int(root[-2:], 16) + 1 + 8 * (switch % 2), 3)
        paths += behind[:2]
        if switch % 2:  # each socket's second switch holds its NIC
            nics.append(FakeNic(f"enp{switch}s0", behind[2], switch // 2, 100_000))
    return Box(
        name="pcie",
        gpu_paths=paths,
        numa=[gpu // 4 for gpu in range(8)],
        switch=[gpu // 2 for gpu in range(8)],
        root=[roots[gpu // 4] for gpu in range(8)],
        p2p={"read": OK, "write": OK, "nvlink": NOT_SUPPORTED, "atomics": NOT_SUPPORTED, "pci": OK},
        p2p_across={
            cap: CHIPSET if cap != "nvlink" else NOT_SUPPORTED
            for cap in ("read", "write", "nvlink", "atomics", "pci")
        },
        widths={5: 8},
        nics=nics,
    )


def bridged_pair() -> Box:
    statuses = {"read": OK, "write": OK, "nvlink": OK, "atomics": OK, "pci": OK}
    return Box(
        name="bridged",
        gpu_paths=_switch("pci0000:00", 1, 1, 2),
        numa=[0, 0],
        switch=[0, 0],
        root=["pci0000:00"] * 2,
        bridge_links=4,
        nvlink_version=4,
        p2p=statuses,
        p2p_across=statuses,
    )


BOXES = {"nvlink8": nvlink_box, "pcie8": pcie_box, "bridged2": bridged_pair}


class TopologyNvml(FakeNvml):
    """FakeNvml answering the topology reads for a Box."""

    def __init__(self, box: Box, **options: Any) -> None:
        super().__init__(box.fake_gpus(), **options)
        self.box = box

    def _index(self, handle: FakeGpu) -> int:
        return self.gpus.index(handle)

    def nvmlDeviceGetPciInfo(self, handle: FakeGpu) -> SimpleNamespace:
        self._enter("nvmlDeviceGetPciInfo", handle)
        domain, rest = self.box.bus_id(self._index(handle)).split(":", 1)
        return SimpleNamespace(busId=f"{int(domain, 16):08X}:{rest.upper()}".encode())

    def nvmlDeviceGetNumaNodeId(self, handle: FakeGpu) -> int:
        self._enter("nvmlDeviceGetNumaNodeId", handle)
        return self.box.numa[self._index(handle)]

    def nvmlDeviceGetCpuAffinity(self, handle: FakeGpu, cpuSetSize: int) -> list[int]:
        self._enter("nvmlDeviceGetCpuAffinity", handle)
        words = [0] * cpuSetSize
        for cpu in self.box.cpus(self.box.numa[self._index(handle)]):
            if cpu < 64 * cpuSetSize:
                words[cpu // 64] |= 1 << (cpu % 64)
        return words

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: FakeGpu) -> int:
        return self.box.widths.get(self._index(handle), 16)

    def nvmlDeviceGetNvLinkVersion(self, device: FakeGpu, link: int) -> int:
        self._enter("nvmlDeviceGetNvLinkVersion", device)
        return self.box.nvlink_version

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, handle: FakeGpu, link: int) -> int:
        self._enter("nvmlDeviceGetNvLinkRemoteDeviceType", handle)
        return TO_GPU if self.box.bridge_links else TO_SWITCH

    def nvmlDeviceGetNvLinkRemotePciInfo(self, handle: FakeGpu, link: int) -> SimpleNamespace:
        self._enter("nvmlDeviceGetNvLinkRemotePciInfo", handle)
        if not self.box.bridge_links:
            return SimpleNamespace(
                busId=f"00000000:{0xC5 + link % 4:02X}:00.0".encode()
            )  # NVSwitch
        return self.nvmlDeviceGetPciInfo(self.gpus[1 - self._index(handle)])

    def nvmlDeviceGetTopologyCommonAncestor(self, device1: FakeGpu, device2: FakeGpu) -> int:
        self._enter("nvmlDeviceGetTopologyCommonAncestor", device1)
        return self.box.level(self._index(device1), self._index(device2))

    def nvmlDeviceGetP2PStatus(self, device1: FakeGpu, device2: FakeGpu, p2pIndex: int) -> int:
        self._enter("nvmlDeviceGetP2PStatus", device1)
        assert type(p2pIndex) is int  # pynvml's own READ constant is a tuple: never used
        a, b = self._index(device1), self._index(device2)
        statuses = self.box.p2p if self.box.numa[a] == self.box.numa[b] else self.box.p2p_across
        capability = ("read", "write", "nvlink", "atomics", "pci")[p2pIndex]
        return statuses[capability]


# --- the same box in sysfs ----------------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def _device(sys: Path, path: list[str], numa: int, cpus: str) -> Path:
    """The device's folder under sys/devices, with its link in sys/bus/pci/devices."""
    folder = sys / "devices" / Path(*path)
    _write(folder / "numa_node", str(numa))
    _write(folder / "local_cpulist", cpus)
    link = sys / "bus" / "pci" / "devices" / path[-1]
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(folder, link.parent))
    return folder


def _cpu_list(cpus: list[int]) -> str:
    return f"{cpus[0]}-{cpus[-1]}"


def write_sysfs(sys: Path, box: Box) -> Path:
    """The box's sysfs under `sys`: NUMA nodes, CPUs, PCI devices, NICs and RDMA devices."""
    for node in range(box.sockets):
        folder = sys / "devices" / "system" / "node" / f"node{node}"
        _write(folder / "cpulist", _cpu_list(box.cpus(node)))
        _write(folder / "meminfo", f"Node {node} MemTotal:       {NODE_MEMORY // 1024} kB")
        _write(
            folder / "distance", " ".join("10" if n == node else "21" for n in range(box.sockets))
        )
        for cpu in box.cpus(node):
            topology = sys / "devices" / "system" / "cpu" / f"cpu{cpu}" / "topology"
            _write(topology / "physical_package_id", str(node))
            _write(topology / "core_id", str(cpu % CORES_PER_SOCKET))
    for gpu, path in enumerate(box.gpu_paths):
        _device(sys, path, box.numa[gpu], _cpu_list(box.cpus(box.numa[gpu])))
    net = sys / "class" / "net"
    _write(net / "lo" / "operstate", "unknown")  # virtual: no device link
    for nic in box.nics:
        folder = _device(sys, nic.path, nic.numa, _cpu_list(box.cpus(nic.numa)))
        _write(net / nic.name / "speed", str(nic.speed_mbps))
        _write(net / nic.name / "operstate", "up")
        _write(net / nic.name / "dev_port", "0")
        (net / nic.name / "device").symlink_to(folder)
        if nic.rdma is not None:
            device, layer, rate = nic.rdma
            rdma = sys / "class" / "infiniband" / device
            _write(rdma / "ports" / "1" / "link_layer", layer)
            _write(rdma / "ports" / "1" / "rate", rate)
            (rdma / "device").symlink_to(folder)
    return sys
