"""The topology through the one NVML gateway, on the fake NVML's 8-GPU boxes with their sysfs:
the GPU matrix, P2P, NUMA and affinity, NICs' paths to GPUs, what NVML cannot answer, and the
welcome that carries it all (old ones still read)."""

from __future__ import annotations

from pathlib import Path

import msgpack
import pytest

from dltui.plans.topology import link_groups, matrix, pcie_below_max, pcie_text, peer_figures
from dltui.protocol.bench_results import KernelResult
from dltui.protocol.inventory import GpuInfo, Inventory
from dltui.protocol.messages import Welcome
from dltui.protocol.topology import GpuPair, Topology
from dltui.protocol.wire import from_wire, to_wire
from dltui.result_text import group_text, link_text, peer_text, wiring_lines
from dltui.telemetry.nvml import NvmlGateway
from dltui.telemetry.topology import read_topology
from tests.fakes.boxes import (
    TopologyNvml,
    bridged_pair,
    nvlink_box,
    pcie_box,
    write_sysfs,
)
from tests.fakes.messages import inventory_of, p2p
from tests.fakes.nvml import (
    FakeGpu,
    FakeNvml,
    NVMLError_GpuIsLost,
    NVMLError_NotSupported,
)

PCIE_MATRIX = """\
X    PIX  PHB  PHB  SYS  SYS  SYS  SYS
PIX  X    PHB  PHB  SYS  SYS  SYS  SYS
PHB  PHB  X    PIX  SYS  SYS  SYS  SYS
PHB  PHB  PIX  X    SYS  SYS  SYS  SYS
SYS  SYS  SYS  SYS  X    PIX  PHB  PHB
SYS  SYS  SYS  SYS  PIX  X    PHB  PHB
SYS  SYS  SYS  SYS  PHB  PHB  X    PIX
SYS  SYS  SYS  SYS  PHB  PHB  PIX  X"""


def shorts(inventory: Inventory) -> str:
    assert inventory.topology is not None
    rows = matrix(inventory.topology, inventory.gpus)
    return "\n".join(
        "  ".join(f"{link.short if link else 'X':<3}" for link in row).rstrip() for row in rows
    )


def test_nvlink_box_every_pair_on_the_nvswitch_fabric(tmp_path: Path) -> None:
    inventory = inventory_of(nvlink_box(), tmp_path)
    topology = inventory.topology
    assert topology is not None and topology.unanswered == {}
    assert len(topology.pairs) == 28
    links = [link for row in matrix(topology, inventory.gpus) for link in row if link]
    assert {(link.kind, link.links, link.nominal_gbps) for link in links} == {
        ("nvswitch", 18, 450.0)
    }
    assert {link.p2p for link in links} == {"P2P read, write, atomics"}
    first = topology.gpus[0]
    assert (first.pci_bus_id, first.numa_node, first.cpu_affinity) == ("0000:03:00.0", 0, "0-31")
    assert (first.nvlink_version, first.nvswitch_links) == (6, 18)
    assert topology.gpus[5].numa_node == 1 and topology.gpus[5].cpu_affinity == "32-63"
    # NVML's PCIe path beneath the NVLink: the pairs still differ there.
    paths = {(pair.a, pair.b): pair.path for pair in topology.pairs}
    assert (paths[0, 1], paths[0, 2], paths[0, 4]) == ("hostbridge", "node", "system")
    assert topology.nics[0].gpu_paths == ["single", "hostbridge", "node", "node"] + ["system"] * 4
    assert (topology.sockets, topology.cores, len(topology.numa_nodes)) == (2, 32, 2)


def test_pcie_box_two_switches_per_socket(tmp_path: Path) -> None:
    inventory = inventory_of(pcie_box(), tmp_path)
    assert inventory.topology is not None
    assert shorts(inventory) == PCIE_MATRIX
    pair = next(p for p in inventory.topology.pairs if (p.a, p.b) == (0, 4))
    assert pair.p2p == pair.p2p_back
    assert pair.p2p["read"] == "chipset not supported" and pair.p2p["nvlink"] == "not supported"
    groups = link_groups(inventory.topology, inventory.gpus)
    assert [(g[0].short, g[0].nominal_gbps, len(g)) for g in groups] == [
        ("PIX", pytest.approx(63.0, abs=0.1), 3),
        ("PIX", pytest.approx(31.5, abs=0.1), 1),  # 4↔5: GPU 5 trained at x8
        ("PHB", pytest.approx(63.0, abs=0.1), 6),
        ("PHB", pytest.approx(31.5, abs=0.1), 2),
        ("SYS", pytest.approx(63.0, abs=0.1), 12),
        ("SYS", pytest.approx(31.5, abs=0.1), 4),
    ]
    assert group_text(groups[1], 28) == (
        "PIX  PCIe through one switch, 32 GB/s each way, P2P read, write: 4↔5"
    )
    assert "no P2P: chipset not supported: 0↔4 0↔6" in group_text(groups[4], 28)
    gpu5 = inventory.gpus[5]
    assert pcie_below_max(gpu5) == "of x16" and pcie_text(gpu5) == "gen5 x8 (of x16)"
    assert pcie_below_max(inventory.gpus[0]) is None
    nics = inventory.topology.nics
    assert [nic.gpu_paths[:4] for nic in nics] == [
        ["hostbridge", "hostbridge", "single", "single"],
        ["system"] * 4,
    ]
    lines = wiring_lines(inventory)
    assert "nic       enp1s0 · 100 Gb/s · NUMA 0 · PIX to GPU 2,3" in lines
    assert "gpu 5     NUMA 1 · CPUs 32-63 · PCIe gen5 x8 (of x16)" in lines


def test_a_gpu_trained_down_in_generation_is_flagged_as_maybe_idle() -> None:
    idle = GpuInfo(0, "GPU", "", 0, pcie_gen=1, pcie_width=16, pcie_gen_max=5, pcie_width_max=16)
    assert pcie_text(idle) == "gen1 x16 (of gen5, idle?)"


def test_an_nvlink_bridge_is_a_direct_link(tmp_path: Path) -> None:
    inventory = inventory_of(bridged_pair(), tmp_path)
    assert inventory.topology is not None
    (pair,) = inventory.topology.pairs
    assert (pair.path, pair.nvlinks) == ("single", 4)
    (row,) = [link for link in matrix(inventory.topology, inventory.gpus)[0] if link]
    assert (row.kind, row.short, row.label, row.nominal_gbps) == (
        "nvlink",
        "NV4",
        "NVLink ×4",
        100.0,
    )


def test_what_nvml_cannot_answer_is_absent_with_its_reason(tmp_path: Path) -> None:
    nvml = FakeNvml([FakeGpu(uuid="GPU-0"), FakeGpu(uuid="GPU-1")])  # no topology functions
    gateway = NvmlGateway(nvml=nvml)
    gateway.open()
    topology = read_topology(gateway, tmp_path)
    assert topology.gpus[0].pci_bus_id is None and topology.gpus[0].numa_node is None
    assert topology.pairs == [GpuPair(0, 1)]
    assert "is not in this nvidia-ml-py" in topology.unanswered["nvmlDeviceGetP2PStatus"]
    link = matrix(topology, gateway.gpus)[0][1]
    assert link is not None and (link.kind, link.short, link.nominal_gbps) == ("unknown", "?", None)
    faulty = inventory_of(pcie_box(), tmp_path, nvmlDeviceGetNvLinkVersion=NVMLError_NotSupported())
    assert faulty.topology is not None


def test_p2p_not_supported_and_a_lost_gpu(tmp_path: Path) -> None:
    box = pcie_box()
    nvml = TopologyNvml(box)
    nvml.gpus[1].faults["nvmlDeviceGetHandleByIndex"] = NVMLError_GpuIsLost()
    original = nvml.nvmlDeviceGetP2PStatus

    def refuse_atomics(first: FakeGpu, second: FakeGpu, index: int) -> int:
        if index == 3:
            raise NVMLError_NotSupported()
        return original(first, second, index)

    nvml.nvmlDeviceGetP2PStatus = refuse_atomics  # type: ignore[method-assign]
    gateway = NvmlGateway(nvml=nvml)
    gateway.open()
    topology = read_topology(gateway, write_sysfs(tmp_path, box))
    assert topology.gpus[1].pci_bus_id is None  # lost: nothing read, nothing made up
    lost = [pair for pair in topology.pairs if 1 in (pair.a, pair.b)]
    assert all(pair == GpuPair(pair.a, pair.b) for pair in lost)
    pair = next(p for p in topology.pairs if (p.a, p.b) == (2, 3))
    assert "atomics" not in pair.p2p and pair.p2p["read"] == "ok"
    assert topology.unanswered["nvmlDeviceGetP2PStatus"] == "Not Supported"


def test_the_welcome_carries_it_and_old_welcomes_still_read(tmp_path: Path) -> None:
    inventory = inventory_of(nvlink_box(), tmp_path)
    welcome = Welcome("agent", inventory, 10.0, 1.0, 2.0)
    wire = msgpack.unpackb(msgpack.packb(to_wire(welcome)))
    assert from_wire(wire) == welcome
    del wire["inventory"]["topology"]  # an agent older than topology
    old = from_wire(wire)
    assert isinstance(old, Welcome) and old.inventory.topology is None
    assert wiring_lines(old.inventory) == ["wiring    not reported (an agent older than topology)"]
    unknown = Topology(pairs=[GpuPair(0, 1, path="quantum")])
    newer = to_wire(Welcome("agent", Inventory("h", "o", "c", 1, 1, topology=unknown), 1, 1, 2))
    decoded = from_wire(msgpack.unpackb(msgpack.packb(newer)))
    assert isinstance(decoded, Welcome) and decoded.inventory.topology is not None
    assert decoded.inventory.topology.pairs[0].path == "quantum"  # a word from a newer agent


def test_peer_copies_laid_over_their_links(tmp_path: Path) -> None:
    inventory = inventory_of(pcie_box(), tmp_path)
    assert inventory.topology is not None
    results = [
        p2p(0, 1, 25.0, 2**20), p2p(0, 1, 52.0), p2p(1, 0, 51.0), p2p(0, 4, 20.0),
        # CUDA's numbering, from before results named NVML's: left out
        KernelResult("bandwidth", "torch", "cuda:0", "", "p2p", "p2p 0→2", gbps=40.0),
    ]  # fmt: skip
    texts = [peer_text(f) for f in peer_figures(inventory.topology, inventory.gpus, results)]
    assert texts == [
        "GPU0↔GPU1 PIX: 52 / 51 GB/s (83% of 63)",
        "GPU0↔GPU4 SYS: 20 GB/s (32% of 63)",
    ]
    nvlink = inventory_of(nvlink_box(), tmp_path)
    assert nvlink.topology is not None
    (figure,) = peer_figures(nvlink.topology, nvlink.gpus, [p2p(0, 1, 395.0)])
    assert peer_text(figure) == "GPU0↔GPU1 NVLink ×18 (NVSwitch): 395 GB/s (88% of 450)"
    copy = KernelResult("bandwidth", "torch", "cuda:0", "", "p2p", "p2p", gbps=395.0,
                        link="NVLink ×18 (NVSwitch)", nominal_gbps=450.0)  # fmt: skip
    assert link_text(copy) == "88% of NVLink ×18 (NVSwitch), 450 GB/s"


NVIDIA_SMI_TOPO = (
    "\t\x1b[4mGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
    "GPU0\t X \tNV18\tPIX\tSYS\t0-31\t0\t\tN/A\n"
    "GPU1\tNV18\t X \tPHB\tSYS\t0-31\t0\t\tN/A\n"
    "NIC0\tPIX\tPHB\t X \tSYS\t\t\t\t\n"
    "NIC1\tSYS\tSYS\tSYS\t X \t\t\t\t\n"
    "\nLegend:\n\n  X    = Self\n  NV#  = Connection traversing a bonded set of # NVLinks\n"
    "\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_4\n"
)
"""nvidia-smi topo -m as it prints two GPUs of the NVSwitch box and two of its NICs."""


def test_the_device_check_reads_nvidia_smis_table_and_names_disagreements(tmp_path: Path) -> None:
    from benchmarks.topology_check import disagreements, parse_topo

    table, legend = parse_topo(NVIDIA_SMI_TOPO)
    assert table["GPU1"]["GPU0"] == "NV18" and table["GPU0"]["CPU Affinity"] == "0-31"
    assert legend == {"NIC0": "mlx5_0", "NIC1": "mlx5_4"}
    inventory = inventory_of(nvlink_box(), tmp_path)
    assert disagreements(inventory, table, legend) == []
    table["GPU0"]["NIC1"] = "NODE"
    table["GPU1"]["NUMA Affinity"] = "1"
    assert disagreements(inventory, table, {**legend, "NIC2": "mlx5_9"}) == [
        "GPU1 NUMA: dltui 0, nvidia-smi 1",
        "mlx5_4-GPU0: dltui SYS, nvidia-smi NODE",
        "NIC2 (mlx5_9): nvidia-smi lists it, dltui found no such NIC",
    ]


def test_nvlink_that_nvml_vouches_for_without_its_far_ends_is_nvlink_of_unknown_links(
    tmp_path: Path,
) -> None:
    inventory = inventory_of(
        nvlink_box(), tmp_path, nvmlDeviceGetNvLinkRemoteDeviceType=NVMLError_NotSupported()
    )
    assert inventory.topology is not None
    assert {place.nvswitch_links for place in inventory.topology.gpus} == {0}
    link = matrix(inventory.topology, inventory.gpus)[0][1]
    assert link is not None
    assert (link.kind, link.short, link.label, link.nominal_gbps) == (
        "nvlink",
        "NV?",
        "NVLink (links not read)",
        None,
    )
