"""GPU sets chosen along the topology: the sweep's counts and sets on both 8-GPU boxes, the rank
order, the fallback without a topology, and the worker's side (CUDA_VISIBLE_DEVICES by UUID,
the result marked, a user's own CUDA_VISIBLE_DEVICES kept, a copy's link)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from dltui.bench import placement as worker
from dltui.bench.ranks import supervise
from dltui.bench.shapes import BandwidthCase
from dltui.plans.placement import choose, sweep_counts, sweep_sets
from dltui.protocol.bench_plans import ModelPlan
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.protocol.inventory import GpuInfo, Inventory
from dltui.protocol.topology import GpuPair, Topology
from dltui.tui.launch_plans import Choice, make_launch
from tests.fakes.boxes import nvlink_box, pcie_box
from tests.fakes.messages import inventory_of


@pytest.fixture
def pcie(tmp_path: Path) -> Inventory:
    return inventory_of(pcie_box(), tmp_path)


@pytest.fixture
def nvlink(tmp_path: Path) -> Inventory:
    return inventory_of(nvlink_box(), tmp_path)


def test_pcie_box_sweep_one_switch_then_one_numa_node_then_all(pcie: Inventory) -> None:
    assert sweep_counts(pcie) == [1, 2, 4, 8]
    assert [(s.gpus, s.words) for s in sweep_sets(pcie)] == [
        ([0], "GPU 0 · NUMA 0"),
        ([0, 1], "GPU 0,1 · PIX: PCIe through one switch · NUMA 0"),
        ([0, 1, 2, 3], "GPU 0–3 · at worst PHB: PCIe through a CPU's host bridge · NUMA 0"),
        ([0, 1, 2, 3, 4, 5, 6, 7], "GPU 0–7 · at worst SYS: PCIe across CPU sockets · NUMA 0,1"),
    ]


def test_a_pair_on_a_switch_beats_a_lower_index_across_sockets(pcie: Inventory) -> None:
    topology = pcie.topology
    assert topology is not None
    # Without GPU 0 and 1, the best pair is the next switch's, not GPU 2 with GPU 4.
    rest = replace(pcie, gpus=pcie.gpus[2:])
    assert choose(rest, 2).gpus == [2, 3]
    # Three GPUs: a switch pair and its socket's neighbour, never across the sockets.
    assert choose(pcie, 3).gpus == [0, 1, 2]


def test_rank_order_keeps_neighbours_next_to_each_other(pcie: Inventory) -> None:
    spread = replace(pcie, gpus=[pcie.gpus[i] for i in (0, 2, 4, 1, 3)])
    chosen = choose(spread, 4)
    assert chosen.gpus == [0, 1, 2, 3]  # 0→1 (PIX), 1→2 (PHB), 2→3 (PIX)


def test_nvlink_box_sweep_names_its_fabric(nvlink: Inventory) -> None:
    assert sweep_counts(nvlink) == [1, 2, 4, 8]
    sets = sweep_sets(nvlink)
    assert sets[1].words == "GPU 0,1 · NVLink ×18 (NVSwitch) · NUMA 0"
    assert sets[2].gpus == [0, 1, 2, 3]  # one NUMA node: the CPUs that feed them are near
    assert sets[3].words == "GPU 0–7 · at worst NVLink ×18 (NVSwitch) · NUMA 0,1"


def test_without_a_topology_the_sweep_doubles_and_says_so() -> None:
    gpus = [GpuInfo(i, "GPU", f"GPU-{i}", 0) for i in range(6)]
    old = Inventory("h", "o", "c", 8, 1, gpus=gpus)
    assert sweep_counts(old) == [1, 2, 4, 6]
    assert choose(old, 2).words == "GPU 0,1 · the first GPUs: no topology from the agent"
    assert sweep_counts(Inventory("h", "o", "c", 8, 1)) == [1, 2]  # a CPU: processes
    silent = replace(old, topology=Topology())  # NVML answered nothing of the pairs
    assert choose(silent, 3).gpus == [0, 1, 2]
    two = replace(old, gpus=gpus[:2], topology=Topology(pairs=[GpuPair(0, 1)]))
    assert sweep_counts(two) == [1, 2]


def test_the_worker_places_ranks_by_uuid_and_marks_results(
    pcie: Inventory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(worker, "here", lambda: pcie)
    placed = worker.place(2)
    assert placed is not None
    assert placed.env == {"CUDA_VISIBLE_DEVICES": "GPU-pcie-0,GPU-pcie-1"}
    seen: list[object] = []
    run = ModelResult("resnet50", "torch", "cuda", "bf16", 2, 256)
    placed.mark(seen.append)(run)
    assert seen == [replace(run, gpu_set=[0, 1], placement=placed.words)]
    everything = worker.place(0)
    assert everything is not None and everything.gpus == list(range(8))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    kept = worker.place(2)
    assert kept is not None and kept.env == {} and "CUDA_VISIBLE_DEVICES=3,1" in kept.words
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setattr(worker, "here", lambda: Inventory("h", "o", "c", 2, 1))
    assert worker.place(2) is None  # no GPU: CPU processes, nothing to place


def test_a_copy_names_its_gpus_link_and_nominal_rate(
    nvlink: Inventory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker, "here", lambda: nvlink)
    # CUDA numbers the GPUs its own way: CUDA 0 is NVML 3 here, CUDA 1 NVML 0.
    nvml = worker.nvml_indices(["pcie-0-not-here", "GPU-nvlink-3", "nvlink-0"])
    assert nvml == [None, 3, 0]
    peer = BandwidthCase("p2p", 2**30, src=1, dst=2)
    result = KernelResult("bandwidth", "torch", "cuda:0", "", "p2p", peer.label, gbps=390.0)
    found = worker.copy_link(result, peer, nvml)
    assert (found.gpu_set, found.link, found.nominal_gbps) == (
        [3, 0],
        "NVLink ×18 (NVSwitch)",
        450.0,
    )
    h2d = BandwidthCase("h2d", 2**30, pinned=True)
    up = worker.copy_link(result, h2d, [3])
    assert (up.gpu_set, up.link, up.nominal_gbps) == (
        [3],
        "PCIe gen5 x16",
        pytest.approx(63.0, abs=0.1),
    )
    assert worker.copy_link(result, peer, [None, 3]) == result  # one end unknown: unchanged
    host = BandwidthCase("d2d", 2**20, on_host=True)
    assert worker.copy_link(result, host, [3]) == result


def test_the_launchers_sweep_runs_along_the_topology_and_names_its_sets(pcie: Inventory) -> None:
    launch = make_launch(Choice("scale_up"), [pcie])
    ((plan, across),) = launch.plans
    assert isinstance(plan, ModelPlan) and not across
    assert plan.gpus == [1, 2, 4, 8]
    assert launch.description == "Scale-up sweep: GPU 0 · GPU 0,1 · GPU 0–3 · GPU 0–7"
    old = replace(pcie, topology=None, gpus=pcie.gpus[:6])
    ((doubled, _),) = make_launch(Choice("scale_up"), [old]).plans
    assert isinstance(doubled, ModelPlan) and doubled.gpus == [1, 2, 4, 6]


RANK = """
import os
from dltui.bench.ranks import Reporter
from dltui.protocol.bench_results import KernelResult
shape = os.environ.get("CUDA_VISIBLE_DEVICES", "unset")
Reporter.on_stdout(0).result(KernelResult("allreduce", "torch", "cuda", "fp32", "allreduce", shape))
"""


def test_ranks_start_with_the_placements_environment() -> None:
    seen: list[KernelResult] = []
    env = {"CUDA_VISIBLE_DEVICES": "GPU-b,GPU-a"}
    command = [sys.executable, "-c", RANK]
    measured, failure = supervise(
        [command], ["case"], 30.0, True, seen.append, lambda *_: None, lambda: False,
        KernelResult, env=env,
    )  # fmt: skip
    assert (measured, failure) == (1, None)
    assert seen[0].shape == "GPU-b,GPU-a"
