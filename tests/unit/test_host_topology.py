"""The host's side of the topology, read from fake sysfs trees under tmp_path: NUMA nodes,
sockets and cores, NICs with speed and RDMA, PCI paths, and the path between a NIC and a GPU."""

from __future__ import annotations

import os
from pathlib import Path

from dltui.telemetry import host_topology as sysfs
from dltui.telemetry.host_topology import bus_id, cpu_list, pci_relation
from tests.fakes.boxes import NODE_MEMORY, nvlink_box, pcie_box, write_sysfs


def test_numa_nodes_sockets_and_cores(tmp_path: Path) -> None:
    sys = write_sysfs(tmp_path, pcie_box())
    nodes = sysfs.numa_nodes(sys)
    assert [(n.node, n.cpus, n.memory_total, n.distances) for n in nodes] == [
        (0, "0-31", NODE_MEMORY, [10, 21]),
        (1, "32-63", NODE_MEMORY, [21, 10]),
    ]
    assert sysfs.sockets_and_cores(sys) == (2, 32)  # 64 CPUs, two threads a core


def test_nothing_in_sysfs_is_nothing_made_up(tmp_path: Path) -> None:
    assert sysfs.numa_nodes(tmp_path) == []
    assert sysfs.sockets_and_cores(tmp_path) == (None, None)
    assert sysfs.nics(tmp_path) == []


def test_offline_cpus_and_node_folders_without_files_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "devices/system/cpu/cpu0/topology").mkdir(parents=True)
    (tmp_path / "devices/system/cpu/cpu0/topology/physical_package_id").write_text("0\n")
    (tmp_path / "devices/system/cpu/cpu0/topology/core_id").write_text("3\n")
    (tmp_path / "devices/system/cpu/cpu1").mkdir()  # offline: no topology folder
    (tmp_path / "devices/system/node/node0").mkdir(parents=True)
    (tmp_path / "devices/system/node/possible").write_text("0\n")
    assert sysfs.sockets_and_cores(tmp_path) == (1, 1)
    (node,) = sysfs.numa_nodes(tmp_path)
    assert (node.node, node.cpus, node.memory_total, node.distances) == (0, None, None, [])


def test_nics_with_rdma_and_without_virtual_interfaces(tmp_path: Path) -> None:
    sys = write_sysfs(tmp_path, nvlink_box())
    found = sysfs.nics(sys)
    assert [nic.name for nic in found] == [f"ibp{i}s0" for i in range(8)]  # no lo
    first = found[0]
    assert first.pci_bus_id == "0000:04:00.0"
    assert first.pci_path == [
        "pci0000:00", "0000:00:01.0", "0000:01:00.0", "0000:02:01.0", "0000:04:00.0"
    ]  # fmt: skip
    assert (first.numa_node, first.speed_mbps, first.state) == (0, 400_000, "up")
    assert (first.rdma_device, first.rdma_link_layer, first.rdma_rate) == (
        "mlx5_0", "InfiniBand", "400 Gb/sec (4X NDR)"
    )  # fmt: skip
    plain = sysfs.nics(write_sysfs(tmp_path / "pcie", pcie_box()))
    assert [(nic.name, nic.rdma_device, nic.numa_node) for nic in plain] == [
        ("enp1s0", None, 0),
        ("enp3s0", None, 1),
    ]


def test_a_link_that_is_down_has_no_speed_and_an_rdma_device_without_interface_is_listed(
    tmp_path: Path,
) -> None:
    sys = write_sysfs(tmp_path, pcie_box())
    (sys / "class/net/enp1s0/speed").write_text("-1\n")  # the kernel's answer while down
    (sys / "class/net/enp1s0/operstate").write_text("down\n")
    (sys / "class/net/enp3s0/speed").unlink()  # or EINVAL: unreadable
    nic = sys / "bus/pci/devices/0000:0d:00.0"
    rdma = sys / "class/infiniband/mlx5_9"
    (rdma / "ports/1").mkdir(parents=True)
    (rdma / "ports/1/link_layer").write_text("Ethernet\n")
    (rdma / "device").symlink_to(os.path.realpath(nic))
    storage = sys / "class/infiniband/mlx5_8"  # an HCA with no netdev on its function
    (storage / "ports/1").mkdir(parents=True)
    (storage / "ports/1/rate").write_text("200 Gb/sec (4X HDR)\n")
    hca = sys / "devices/pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:02.0/0000:85:00.0"
    hca.mkdir(parents=True)
    (hca / "numa_node").write_text("1\n")
    (sys / "bus/pci/devices/0000:85:00.0").symlink_to(hca)
    (storage / "device").symlink_to(hca)
    found = {nic.name: nic for nic in sysfs.nics(sys)}
    down = found["enp1s0"]
    assert (down.speed_mbps, down.state) == (None, "down")
    assert (down.rdma_device, down.rdma_link_layer) == ("mlx5_9", "Ethernet")  # RoCE
    assert found["enp3s0"].speed_mbps is None
    alone = found["mlx5_8"]
    assert (alone.pci_bus_id, alone.rdma_rate, alone.numa_node) == (
        "0000:85:00.0", "200 Gb/sec (4X HDR)", 1
    )  # fmt: skip


def test_pci_path_of_a_virtio_nic_and_of_no_device(tmp_path: Path) -> None:
    virtio = tmp_path / "devices/pci0000:00/0000:00:03.0/virtio0"
    virtio.mkdir(parents=True)
    link = tmp_path / "class/net/eth0/device"
    link.parent.mkdir(parents=True)
    link.symlink_to(virtio)
    assert sysfs.pci_path(link) == ["pci0000:00", "0000:00:03.0"]
    assert sysfs.pci_path(tmp_path / "absent") == []
    (nic,) = sysfs.nics(tmp_path)
    assert (nic.name, nic.pci_bus_id, nic.speed_mbps, nic.numa_node) == (
        "eth0", "0000:00:03.0", None, None
    )  # fmt: skip


def test_bus_ids_and_cpu_lists() -> None:
    assert bus_id("00000000:18:00.0") == "0000:18:00.0"
    assert bus_id("0000000A:AB:1F.3") == "000a:ab:1f.3"
    assert cpu_list([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert cpu_list([]) == ""


def _path(*devices: str, root: str = "pci0000:00") -> list[str]:
    return [root, *devices]


def test_pci_relation_in_nvidia_smi_terms() -> None:
    gpu = _path("0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0")
    beside = _path("0000:00:01.0", "0000:01:00.0", "0000:02:01.0", "0000:04:00.0")
    deeper = _path("0000:00:01.0", "0000:01:00.0", "0000:02:02.0", "0000:05:00.0",
                   "0000:06:00.0", "0000:07:00.0")  # fmt: skip
    other_port = _path("0000:00:02.0", "0000:09:00.0", "0000:0a:00.0", "0000:0b:00.0")
    other_root = _path("0000:20:01.0", "0000:21:00.0", root="pci0000:20")
    same = (0, 0)
    assert pci_relation(gpu, beside, same, False) == "single"
    assert pci_relation(gpu, deeper, same, False) == "multiple"
    assert pci_relation(gpu, other_port, same, False) == "hostbridge"
    assert pci_relation(gpu, other_root, same, False) == "node"
    assert pci_relation(gpu, other_root, (0, 1), False) == "system"
    assert pci_relation(gpu, other_root, (0, None), False) is None  # never guessed
    assert pci_relation(gpu, other_root, (None, None), True) == "node"  # one node: shared
    assert pci_relation(gpu, [], same, False) is None
