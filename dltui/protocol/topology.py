"""How a server is wired, as its agent read it once at start: part of the inventory.

GPU to GPU (NVML's path level, NVLink links, P2P answers), GPU to CPU (NUMA node, CPU
affinity), the host's NUMA nodes and sockets, and its NICs with their path to each GPU. Every
value is what NVML or the kernel's sysfs answered; where neither answered it is None (or
empty), never a guess. The words for these values (link kinds, nominal rates) are in
`dltui.plans.topology`.

Values that name a kind (a path level, a P2P status) are plain strings, not literals: a newer
agent may send a word an older client does not know, which must not close the connection.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class GpuPlacement:
    """Where one GPU sits: its PCI address, NUMA node, nearest CPUs and NVLink ports."""

    index: int
    """NVML's index, as in Inventory.gpus."""
    pci_bus_id: str | None = None
    """"0000:18:00.0", sysfs's spelling (NVML's has an eight-digit domain)."""
    pci_path: list[str] = field(default_factory=list)
    """The PCI devices from the root complex down to the GPU, as sysfs links them:
    ["pci0000:00", "0000:00:01.0", "0000:01:00.0", …]; empty where sysfs has no such device."""
    numa_node: int | None = None
    cpu_affinity: str | None = None
    """The CPUs nearest the GPU as a Linux CPU list, "0-47,96-143"."""
    nvlink_version: int | None = None
    """NVML's nvmlNvlinkVersion_t code of its active links (6: NVLink 4.0)."""
    nvswitch_links: int = 0
    """Active links that end at an NVSwitch: through them the GPU reaches every GPU on the
    same NVSwitch fabric."""


@dataclass(frozen=True, slots=True)
class GpuPair:
    """Two GPUs, `a` < `b`: the path between them and what P2P NVML says they can do."""

    a: int
    b: int
    path: str | None = None
    """NVML's common-ancestor level: "internal", "single", "multiple", "hostbridge", "node"
    or "system" (nvmlDeviceGetTopologyCommonAncestor); None where NVML did not answer."""
    nvlinks: int = 0
    """Active links of `a` whose far end is `b` (direct NVLink, no switch)."""
    p2p: dict[str, str] = field(default_factory=dict)
    """Capability ("read", "write", "atomics", "nvlink", "pci") -> NVML's status from `a` to
    `b` ("ok", "not supported", …); a capability NVML did not answer for is absent."""
    p2p_back: dict[str, str] = field(default_factory=dict)
    """The same from `b` to `a`."""


@dataclass(frozen=True, slots=True)
class NumaNode:
    node: int
    cpus: str | None = None
    """Its CPUs as a Linux CPU list."""
    memory_total: int | None = None
    """Bytes."""
    distances: list[int] = field(default_factory=list)
    """The kernel's distance to every node, in node order (10: itself)."""


@dataclass(frozen=True, slots=True)
class Nic:
    """A network interface on a PCI device (virtual interfaces are left out), or an RDMA
    device without one."""

    name: str
    pci_bus_id: str | None = None
    pci_path: list[str] = field(default_factory=list)
    numa_node: int | None = None
    speed_mbps: int | None = None
    """The link's speed as the kernel reports it; None while the link is down or unknown."""
    state: str | None = None
    """The kernel's operstate: "up", "down", …"""
    rdma_device: str | None = None
    """The RDMA device on the same PCI function (/sys/class/infiniband), e.g. "mlx5_0"."""
    rdma_link_layer: str | None = None
    """"InfiniBand" or "Ethernet" (RoCE)."""
    rdma_rate: str | None = None
    """The RDMA port's rate as the kernel words it, e.g. "400 Gb/sec (4X NDR)"."""
    gpu_paths: list[str | None] = field(default_factory=list)
    """Its path to each GPU, in Topology.gpus order, in NVML's level words ("single": one PCIe
    switch, "system": across CPU sockets, …), from the two PCI paths; None where unknown."""


@dataclass(frozen=True, slots=True)
class Topology:
    gpus: list[GpuPlacement] = field(default_factory=list)
    pairs: list[GpuPair] = field(default_factory=list)
    """Every pair of GPUs once."""
    numa_nodes: list[NumaNode] = field(default_factory=list)
    sockets: int | None = None
    cores: int | None = None
    """Physical cores over all sockets (Inventory.cpu_count counts logical CPUs)."""
    nics: list[Nic] = field(default_factory=list)
    unanswered: dict[str, str] = field(default_factory=dict)
    """NVML reads that did not answer (function -> NVML's reason, the first one seen), so a
    missing value says why."""
