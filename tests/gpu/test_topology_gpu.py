"""The topology on real GPUs: what NVML and sysfs say agrees with each other and with
`nvidia-smi topo -m`; copies name their GPUs and link and stay under its nominal rate; with two
GPUs or more, all-reduce ranks run where the topology places them. Skipped without NVML GPUs;
the copies and ranks need PyTorch with CUDA.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.topology_check import disagreements, parse_topo
from dltui.bench import placement
from dltui.bench.suite import run_plan
from dltui.protocol.bench_plans import KernelPlan
from dltui.protocol.bench_results import KernelResult
from dltui.protocol.inventory import Inventory
from dltui.telemetry.inventory import build_inventory
from dltui.telemetry.nvml import NvmlGateway

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def inventory() -> Iterator[Inventory]:
    gateway = NvmlGateway()
    taken = build_inventory(gateway)
    gateway.close()
    if not taken.gpus:
        pytest.skip(f"no GPU through NVML: {taken.nvml_error}")
    yield taken


def test_each_gpu_is_where_sysfs_says(inventory: Inventory) -> None:
    topology = inventory.topology
    assert topology is not None
    print(topology)
    count = len(inventory.gpus)
    assert len(topology.gpus) == count and len(topology.pairs) == count * (count - 1) // 2
    for place in topology.gpus:
        assert place.pci_bus_id is not None, topology.unanswered
        device = Path("/sys/bus/pci/devices") / place.pci_bus_id
        assert device.exists() and place.pci_path[-1] == place.pci_bus_id
        numa = int((device / "numa_node").read_text())
        if numa >= 0:  # -1: the kernel knows none (a VM); NVML may still name one
            assert place.numa_node == numa
        assert place.cpu_affinity, "NVML or sysfs gives every GPU's nearest CPUs"
    assert topology.numa_nodes and topology.sockets and topology.cores


def test_it_agrees_with_nvidia_smi(inventory: Inventory) -> None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        pytest.skip("no nvidia-smi")
    text = subprocess.run([smi, "topo", "-m"], capture_output=True, text=True).stdout
    print(text)
    table, legend = parse_topo(text)
    assert disagreements(inventory, table, legend) == []


@pytest.fixture(scope="module")
def copies() -> list[KernelResult]:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    found: list[KernelResult] = []
    plan = KernelPlan(kinds=["bandwidth"], shape_set="tiny", device="cuda", max_seconds=0.5)
    run_plan(plan, found.append, lambda *_: None)
    return found


def test_copies_name_their_link_and_stay_under_its_nominal_rate(
    inventory: Inventory, copies: list[KernelResult]
) -> None:
    for result in copies:
        print(result.shape, result.gbps, result.gpu_set, result.link, result.nominal_gbps)
        assert result.error is None and result.gpu_set, result
        if result.direction in ("h2d", "d2h", "p2p"):
            assert result.link is not None and result.nominal_gbps is not None
            assert result.gbps is not None and result.gbps < result.nominal_gbps * 1.02
    assert {r.direction for r in copies if r.direction == "p2p"} == (
        {"p2p"} if len(inventory.gpus) > 1 else set()
    )


def test_allreduce_ranks_run_where_the_topology_places_them(inventory: Inventory) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.device_count() < 2 or "CUDA_VISIBLE_DEVICES" in os.environ:
        pytest.skip("needs two GPUs, all visible")
    expected = placement.place(2)
    assert expected is not None
    found: list[KernelResult] = []
    plan = KernelPlan(kinds=["allreduce"], shape_set="tiny", device="cuda", gpus=2)
    run_plan(plan, found.append, lambda *_: None)
    assert found and all(r.error is None for r in found), found
    assert {tuple(r.gpu_set) for r in found} == {tuple(expected.gpus)}
    assert {r.placement for r in found} == {expected.words}
    print(expected.words, [r.busbw_gbps for r in found])
