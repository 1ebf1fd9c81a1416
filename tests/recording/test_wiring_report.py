"""The report's wiring section: each server's topology beside what it measured over it (peer
copies over their links, all-reduce with the GPUs it ran on, training runs naming their GPU
set), from recordings of the two 8-GPU boxes; a recording from before topology still reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.protocol.inventory import Inventory
from dltui.protocol.messages import JobEnd, JobProgress, JobResult, Message, Welcome
from dltui.recording.format import Header
from dltui.recording.report import write_report
from dltui.recording.writer import RecordingWriter
from tests.fakes.boxes import nvlink_box, pcie_box
from tests.fakes.messages import allreduce, inventory_of, p2p

pytest.importorskip("matplotlib")
H200 = Path(__file__).resolve().parents[1] / "fixtures/h200x2-kernels.dlrec"


def record(path: Path, inventory: Inventory, results: list[KernelResult | ModelResult]) -> Path:
    writer = RecordingWriter(path, Header("test", 1_700_000_000.0))
    frames: list[Message] = [Welcome("agent", inventory, 10.0, 1.0, 1.0)]
    for done, result in enumerate(results):
        frames += [JobProgress("j", done, len(results), "case"), JobResult.of("j", result)]
    frames.append(JobEnd("j", "done", wall=1_700_000_100.0))
    for at, message in enumerate(frames):
        writer.write("server:7070", message, 1_700_000_000.0 + at)
    writer.close()
    return path


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    tmp_path = tmp_path_factory.mktemp("wiring")
    nvlink = inventory_of(nvlink_box(), tmp_path)
    pcie = inventory_of(pcie_box(), tmp_path)
    pair = "GPU 0,1 · PIX: PCIe through one switch · NUMA 0"
    resnet = ModelResult("resnet50", "torch", "cuda", "bf16", 2, 256, images_per_s=1500.0,
                         gpu_set=[0, 1], placement=pair)  # fmt: skip
    paths = [
        record(tmp_path / "dgx.dlrec", nvlink, [
            p2p(0, 1, 395.0), p2p(1, 0, 392.0), p2p(0, 4, 389.0),
            allreduce(8, 480.0, "GPU 0–7 · at worst NVLink ×18 (NVSwitch) · NUMA 0,1",
                      list(range(8))),
        ]),
        record(tmp_path / "pcie.dlrec", pcie, [
            p2p(0, 1, 52.0), p2p(0, 4, 20.0), allreduce(2, 24.0, pair, [0, 1]), resnet,
        ]),
        H200,
    ]  # fmt: skip
    out = tmp_path / "report"
    markdown = write_report(paths, out, print).read_text()
    return markdown, (out / "index.html").read_text()


def test_each_servers_wiring_beside_what_it_measured(report: tuple[str, str]) -> None:
    markdown, _ = report
    section = markdown[markdown.index("## How each server is wired") :]
    dgx = section[section.index("### dgx: box") : section.index("### pcie: box")]
    assert (
        "links     NV18 NVLink ×18 (NVSwitch), 450 GB/s each way, "
        "P2P read, write, atomics: all 28 pairs" in dgx
    )
    assert (
        "| GPU0 | X | NV18 395 | NV18 | NV18 | NV18 389 | NV18 | NV18 | NV18 | 0 | gen5 x16 |"
        in dgx
    )
    assert "- GPU0↔GPU1 NVLink ×18 (NVSwitch): 395 / 392 GB/s (88% of 450)" in dgx
    assert (
        "| 8 | GPU 0–7 · at worst NVLink ×18 (NVSwitch) · NUMA 0,1 | 246.0 MiB | 480 GB/s |" in dgx
    )
    pcie = section[section.index("### pcie: box") :]
    assert "- GPU0↔GPU4 SYS: 20 GB/s (32% of 63)" in pcie
    assert "| GPU5 | SYS | SYS | SYS | SYS | PIX | X | PHB | PHB | 1 | gen5 x8 (of x16) |" in pcie
    assert "nic       enp3s0 · 100 Gb/s · NUMA 1 · PIX to GPU 6,7" in pcie
    h200 = section[section.index("### h200x2-kernels") :]
    assert "wiring    not reported (an agent older than topology)" in h200


def test_training_runs_name_their_gpu_set(report: tuple[str, str]) -> None:
    markdown, _ = report
    row = next(line for line in markdown.splitlines() if "resnet50 ×2 GPUs" in line)
    assert "| GPU 0,1 · PIX: PCIe through one switch · NUMA 0 |" in row


def test_the_html_puts_wiring_and_measurements_side_by_side(report: tuple[str, str]) -> None:
    _, page = report
    assert page.count("<div class='side'>") == 3
    block = page[page.index("<h3>dgx: box</h3>") :]
    left, right = block.split("</div><div>", 1)
    assert "NV18 395" in left and "Peer copies against their links" in right
    assert "GPU0↔GPU1 NVLink ×18 (NVSwitch): 395 / 392 GB/s (88% of 450)" in right
