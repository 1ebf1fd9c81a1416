"""The host's side of the topology, from the kernel's sysfs: NUMA nodes, sockets and cores,
NICs (speed, RDMA), PCI paths, and the path between a NIC and a GPU.

Read once, at the agent's start. Every reader takes the sysfs root, so tests build a fake
tree under a temporary folder. A file that is missing or unreadable means "absent", never a
default: a VM without NUMA information has no NUMA nodes here, not one made up.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from dltui.protocol.topology import Nic, NumaNode

SYS = Path("/sys")
_BDF = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
_ROOT = re.compile(r"^pci[0-9a-f]{4}:[0-9a-f]{2}$")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:  # absent, or refused (a link that is down answers EINVAL for its speed)
        return None


def _number(path: Path) -> int | None:
    text = _read(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _node(value: int | None) -> int | None:
    """The kernel's NUMA node of a device; -1 means it has none."""
    return value if value is not None and value >= 0 else None


def _by_number(paths: list[Path], prefix: str) -> list[Path]:
    return sorted(paths, key=lambda path: int(path.name.removeprefix(prefix)))


# --- CPUs and memory ------------------------------------------------------------------------


def cpu_list(cpus: list[int]) -> str:
    """CPU numbers in the kernel's list format: [0, 1, 2, 5] -> "0-2,5"."""
    ranges: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(f"{low}-{high}" if high > low else f"{low}" for low, high in ranges)


def numa_nodes(sys: Path = SYS) -> list[NumaNode]:
    """Each NUMA node with its CPUs, memory and distances; empty where sysfs has none."""
    found = []
    folder = sys / "devices" / "system" / "node"
    nodes = [path for path in folder.glob("node*") if path.name[4:].isdigit()]
    for path in _by_number(nodes, "node"):
        distances = (_read(path / "distance") or "").split()
        found.append(
            NumaNode(
                node=int(path.name[4:]),
                cpus=_read(path / "cpulist") or None,
                memory_total=_node_memory(path / "meminfo"),
                distances=[int(d) for d in distances if d.isdigit()],
            )
        )
    return found


def _node_memory(meminfo: Path) -> int | None:
    """MemTotal of one node: "Node 0 MemTotal:       131900000 kB"."""
    for line in (_read(meminfo) or "").splitlines():
        words = line.split()
        if len(words) >= 4 and words[2] == "MemTotal:" and words[3].isdigit():
            return int(words[3]) * 1024
    return None


def sockets_and_cores(sys: Path = SYS) -> tuple[int | None, int | None]:
    """Physical packages and physical cores of the online CPUs; None where sysfs cannot say."""
    packages: set[int] = set()
    cores: set[tuple[int, int]] = set()
    for cpu in (sys / "devices" / "system" / "cpu").glob("cpu[0-9]*"):
        package = _number(cpu / "topology" / "physical_package_id")
        core = _number(cpu / "topology" / "core_id")
        if package is None or core is None:
            continue  # offline: its topology folder is gone
        packages.add(package)
        cores.add((package, core))
    return (len(packages) or None), (len(cores) or None)


# --- PCI -------------------------------------------------------------------------------------


def bus_id(nvml_bus_id: str) -> str:
    """NVML's "00000000:18:00.0" as sysfs names it: "0000:18:00.0"."""
    domain, _, rest = nvml_bus_id.strip().partition(":")
    return f"{int(domain, 16):04x}:{rest.lower()}"


def pci_path(device: Path) -> list[str]:
    """The PCI devices from the root complex down to `device` (a sysfs link to a device, or a
    virtio device under one): ["pci0000:00", "0000:00:01.0", …]; empty where it is not on
    PCI."""
    parts = Path(os.path.realpath(device)).parts
    path = [part for part in parts if _ROOT.match(part) or _BDF.match(part)]
    return path if path and _ROOT.match(path[0]) else []


def device_pci_path(sys: Path, pci_bus_id: str) -> list[str]:
    return pci_path(sys / "bus" / "pci" / "devices" / pci_bus_id)


def device_numa_node(sys: Path, pci_bus_id: str) -> int | None:
    return _node(_number(sys / "bus" / "pci" / "devices" / pci_bus_id / "numa_node"))


def device_cpus(sys: Path, pci_bus_id: str) -> str | None:
    return _read(sys / "bus" / "pci" / "devices" / pci_bus_id / "local_cpulist") or None


def pci_relation(
    first: list[str],
    second: list[str],
    numa: tuple[int | None, int | None],
    single_node: bool,
) -> str | None:
    """The path between two PCI devices in NVML's level words, from their sysfs paths:
    "single" (through one PCIe switch), "multiple" (several switches, no host bridge),
    "hostbridge" (through the root complex), "node" (across root complexes of one NUMA node),
    "system" (across NUMA nodes: the CPUs' interconnect). None where a path or a NUMA node
    is unknown. `single_node`: the host has at most one NUMA node, so any two roots share it.
    """
    if not first or not second:
        return None
    if first[0] != second[0]:
        if single_node:
            return "node"
        if None in numa:
            return None
        return "node" if numa[0] == numa[1] else "system"
    common = 0
    for mine, theirs in zip(first[1:], second[1:], strict=False):
        if mine != theirs:
            break
        common += 1
    if common == 0:
        return "hostbridge"  # different root ports of one root complex
    # Below the deepest shared bridge each side is a switch's downstream port, then the
    # device: anything longer is another switch on the way.
    deeper = max(len(first) - 1 - common, len(second) - 1 - common)
    return "single" if deeper <= 2 else "multiple"


# --- NICs ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Rdma:
    device: str
    link_layer: str | None
    rate: str | None


def _rdma_ports(sys: Path) -> dict[tuple[str, int], _Rdma]:
    """(PCI function, port number) -> the RDMA device and port on it."""
    found = {}
    for device in sorted((sys / "class" / "infiniband").glob("*")):
        function = pci_path(device / "device")
        if not function:
            continue
        for port in (device / "ports").glob("[0-9]*"):
            found[(function[-1], int(port.name))] = _Rdma(
                device.name, _read(port / "link_layer"), _read(port / "rate")
            )
    return found


def nics(sys: Path = SYS) -> list[Nic]:
    """Interfaces on a PCI device (loopback, bridges, veths and tunnels have none), each with
    the RDMA device on its PCI function; then RDMA devices that have no interface."""
    rdma = _rdma_ports(sys)
    found = []
    for interface in sorted((sys / "class" / "net").glob("*")):
        path = pci_path(interface / "device")
        if not path:
            continue
        function = path[-1]
        port = (_number(interface / "dev_port") or 0) + 1  # dev_port counts from 0
        key = (function, port) if (function, port) in rdma else (function, 1)
        match = rdma.get(key)
        speed = _number(interface / "speed")
        found.append(
            Nic(
                name=interface.name,
                pci_bus_id=function,
                pci_path=path,
                numa_node=_node(_number(interface / "device" / "numa_node")),
                speed_mbps=speed if speed is not None and speed > 0 else None,
                state=_read(interface / "operstate"),
                rdma_device=match.device if match else None,
                rdma_link_layer=match.link_layer if match else None,
                rdma_rate=match.rate if match else None,
            )
        )
    shown = {nic.rdma_device for nic in found}
    for (function, _), rdma_port in sorted(rdma.items(), key=lambda item: item[0]):
        if rdma_port.device in shown:
            continue
        shown.add(rdma_port.device)
        found.append(
            Nic(
                name=rdma_port.device,
                pci_bus_id=function,
                pci_path=device_pci_path(sys, function),
                numa_node=device_numa_node(sys, function),
                rdma_device=rdma_port.device,
                rdma_link_layer=rdma_port.link_layer,
                rdma_rate=rdma_port.rate,
            )
        )
    return found
