"""The topology screen (`T` on a server) and the results view's Topology tab, fed the frames an
agent of each 8-GPU box would send: snapshots at 80x24 and 200x60, and Pilot checks of what
they say."""

from __future__ import annotations

import re
import time
from dataclasses import replace
from pathlib import Path

import pytest
from textual.pilot import Pilot

from dltui.protocol.bench_results import ModelResult
from dltui.protocol.messages import (
    ConnectionState,
    JobEnd,
    JobProgress,
    JobResult,
    Message,
    Welcome,
)
from dltui.tui import create_app
from dltui.tui.app import DltuiApp
from dltui.tui.screens.results import ResultsScreen
from dltui.tui.screens.topology import TopologyScreen
from tests.fakes.boxes import Box, nvlink_box, pcie_box
from tests.fakes.messages import allreduce, inventory_of, p2p
from tests.tui.pilot import wait_for_text, wait_until

BOXES = {"dgx": nvlink_box, "pcie": pcie_box}


def frames(box: Box, name: str, tmp_path: Path) -> list[Message]:
    """The box's welcome, then a bandwidth and all-reduce job and a training run on two GPUs."""
    inventory = replace(inventory_of(box, tmp_path), hostname=name)
    nvlink = box.nvlink_to_switch > 0
    pair = ("GPU 0,1 · NVLink ×18 (NVSwitch) · NUMA 0" if nvlink
            else "GPU 0,1 · PIX: PCIe through one switch · NUMA 0")  # fmt: skip
    results = [
        p2p(0, 1, 395.0 if nvlink else 52.0), p2p(1, 0, 392.0 if nvlink else 51.0),
        p2p(0, 4, 389.0 if nvlink else 20.0),
        allreduce(8, 480.0 if nvlink else 18.0, "GPU 0–7 · at worst " + (
            "NVLink ×18 (NVSwitch) · NUMA 0,1" if nvlink
            else "SYS: PCIe across CPU sockets · NUMA 0,1"), list(range(8))),
        ModelResult("resnet50", "torch", "cuda", "bf16", 2, 256,
                    images_per_s=6000.0 if nvlink else 2800.0, gpu_set=[0, 1], placement=pair),
    ]  # fmt: skip
    now = 1_700_000_000.0
    messages: list[Message] = [Welcome(f"agent-{name}", inventory, 10.0, now, 1.0),
                               ConnectionState("live", now, rtt=0.0004, offset=0.0)]  # fmt: skip
    for done, result in enumerate(results):
        messages += [JobProgress("j", done, len(results), "case"), JobResult.of("j", result)]
    return [*messages, JobEnd("j", "done", wall=now + 60)]


def feed(app: DltuiApp, tmp_path: Path, *names: str) -> None:
    for name in names:
        for message in frames(BOXES[name](), name, tmp_path / name):
            app.fleet.apply(f"{name}:7070", message, received=time.time())


def topology_scene(tmp_path: Path, name: str):  # type: ignore[no-untyped-def]
    async def stage(pilot: Pilot[None]) -> None:
        app = pilot.app
        assert isinstance(app, DltuiApp)
        feed(app, tmp_path, name)
        await wait_for_text(pilot, name)
        await pilot.press("T")
        await wait_until(pilot, lambda: isinstance(app.screen, TopologyScreen))
        await wait_for_text(pilot, "GPU to GPU")
        await pilot.pause()

    return stage


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])
@pytest.mark.parametrize("name", ["dgx", "pcie"])
def test_topology_screen(name: str, size: tuple[int, int], tmp_path: Path, snap_compare) -> None:
    stage = topology_scene(tmp_path, name)
    assert snap_compare(create_app([]), terminal_size=size, run_before=stage)


async def test_t_shows_the_wiring_in_words_and_back(tmp_path: Path) -> None:
    app = create_app([])
    async with app.run_test(size=(200, 60)) as pilot:
        feed(app, tmp_path, "pcie", "dgx")
        await wait_for_text(pilot, "dgx")
        await pilot.press("T")
        text = await wait_for_text(pilot, "GPU to GPU")
        assert "2 sockets · 32 cores · NUMA 0: CPUs 0-31, 512.0 GiB" in text
        assert "GPU5  SYS  SYS  SYS  SYS  PIX  X    PHB  PHB  1    32-63 gen5 x8 ⚠ of x16" in text
        assert (
            "PIX  PCIe through one switch, 63 GB/s each way, P2P read, write: 0↔1 2↔3 6↔7" in text
        )
        assert "enp1s0 · 100 Gb/s · NUMA 0 · PIX to GPU 2,3" in text
        assert "GPU0↔GPU4 SYS: 20 GB/s (32% of 63)" in text
        assert "resnet50 ×2: 2,800 img/s · GPU 0,1 · PIX: PCIe through one switch · NUMA 0" in text
        # Side by side on a wide terminal: the matrix and the GPUs in words share rows.
        row = next(line for line in text.splitlines() if line.lstrip().startswith("GPU1  PIX"))
        assert "GPU5 NVIDIA H200 · NUMA 1 · CPUs 32-63 · PCIe gen5 x8 (of x16)" in row
        await pilot.press("right")
        text = await wait_for_text(pilot, "dgx: how it is wired")
        assert (
            "NV18 NVLink ×18 (NVSwitch), 450 GB/s each way, P2P read, write, atomics: all 28 pairs"
            in text
        )
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, TopologyScreen))


async def test_the_results_view_sets_each_servers_wiring_beside_its_figures(tmp_path: Path) -> None:
    app = create_app([])
    async with app.run_test(size=(200, 60)) as pilot:
        feed(app, tmp_path, "dgx", "pcie")
        await wait_for_text(pilot, "pcie")
        await pilot.press("v")
        await wait_until(pilot, lambda: isinstance(app.screen, ResultsScreen))
        await pilot.press("T")
        text = await wait_for_text(pilot, "GPU0↔GPU1 NVLink ×18 \\(NVSwitch\\): 395 / 392 GB/s")
        assert "all-reduce ×8 246.0 MiB: busbw 480 GB/s · GPU 0–7" in text
        dgx = next(line for line in text.splitlines() if "GPU0↔GPU1 NVLink" in line)
        assert "NV18" in dgx.split("GPU0↔GPU1")[0]  # beside the matrix, on the same rows
        assert "GB/s  GPU0  GPU1" in text  # the peer copies' own matrix
        assert re.search(r"GPU0  X     395   ·     ·     389", text)
        await pilot.press("end")  # the second server, below the first
        text = await wait_for_text(pilot, "GPU0↔GPU4 SYS: 20 GB/s \\(32% of 63\\)")


async def test_a_cpu_all_reduce_keeps_its_figure_below_one_gb_per_s(tmp_path: Path) -> None:
    """0.46 GB/s between CPU processes once read "busbw 0 GB/s · GPUs not named"."""
    app = create_app([])
    async with app.run_test(size=(200, 60)) as pilot:
        feed(app, tmp_path, "pcie")
        on_cpu = replace(allreduce(2, 0.4579, "", []), device="cpu")
        app.fleet.apply("pcie:7070", JobResult("cpu", on_cpu), received=time.time())
        await wait_for_text(pilot, "pcie")
        await pilot.press("T")
        await wait_for_text(pilot, "all-reduce ×2 246.0 MiB: busbw 0.458 GB/s · CPU processes")
