"""A recording's health in the report (each GPU's link, memory errors and throttle reasons;
every event) and in the export (the events and processes tables)."""

from __future__ import annotations

import csv
from pathlib import Path

from dltui.protocol.inventory import GpuInfo, Inventory
from dltui.protocol.messages import Event, Sample, Welcome
from dltui.protocol.samples import GpuProcess, GpuSample, HostSample
from dltui.recording.export import export
from dltui.recording.format import Header
from dltui.recording.health_report import events_table, health_table
from dltui.recording.reader import RecordingReader
from dltui.recording.writer import RecordingWriter

T0 = 1.7e9
GPUS = [GpuInfo(0, "NVIDIA H200", "GPU-0", 141 << 30, 5, 16, 5, 16),
        GpuInfo(1, "NVIDIA H200", "GPU-1", 141 << 30, 5, 16, 5, 16)]  # fmt: skip
ALICE = GpuProcess(4242, 70 << 30, "python", "alice", "python train.py", T0 - 60, 99.0, 1 << 30,
                   80.0, 10.0, job="41233")  # fmt: skip


def recording(tmp_path: Path) -> Path:
    path = tmp_path / "sick.dlrec"
    writer = RecordingWriter(path, Header("test", T0, {"gpu-01": "gpu-01:7070"}))
    inventory = Inventory("gpu-01", "Linux", "Xeon", 64, 1 << 40, GPUS)
    writer.write("gpu-01", Welcome("a", inventory, 10.0, T0, 1.0))
    for tick in range(3):
        healthy = {"pcie_gen": 5, "pcie_width": 16, "pcie_replay": 0, "throttle": 0x4}
        sick = {
            "pcie_gen": 5,
            "pcie_width": 8,
            "pcie_replay": 12 + tick,
            "throttle": 0x8,
            "remapped_correctable": 2,
            "remapped_uncorrectable": 1,
            "ecc_uncorrected": 1,
        }
        processes = [ALICE] if tick < 2 else None
        gpus = [GpuSample(0, "ok", healthy, processes=processes), GpuSample(1, "ok", sick)]
        writer.write("gpu-01", Sample(tick, T0 + tick, 1.0 + tick, HostSample({}), gpus))
    writer.write("gpu-01", Event(1, "pcie_link", "warning", "PCIe link trained at gen5 x8 "
                                 "(of x16)", T0 + 1, gpu=1, value=8))  # fmt: skip
    writer.write("gpu-01", Event(2, "xid", "critical", "XID 79: GPU has fallen off the bus",
                                 T0 + 2, gpu=1, state="once", value=79))  # fmt: skip
    writer.close()
    return path


def test_the_reports_health_section(tmp_path) -> None:
    records = RecordingReader(recording(tmp_path)).read_all()
    header, healthy, sick = health_table([("sick", records)])
    assert header[3:5] == ["PCIe link", "replays"] and header[-2:] == ["clocks held by", "events"]
    assert healthy[3:] == ["gen5 x16", "0", "–", "–", "–", "–", "software power cap", "none"]
    assert sick[3:] == ["gen5 x8 (of x16)", "14", "3", "–", "1", "–", "hardware slowdown",
                        "2 (worst critical)"]  # fmt: skip
    _, link, xid = events_table([("sick", records)])
    assert link[1:2] + link[3:7] == ["gpu-01", "1", "warning", "pcie_link", "raised"]
    assert xid[-1] == "XID 79: GPU has fallen off the bus"


def test_the_exports_events_and_processes_tables(tmp_path) -> None:
    rows = export([recording(tmp_path)], "csv", tmp_path / "out", print)
    assert (rows["events"], rows["processes"]) == (2, 1)
    with open(tmp_path / "out" / "events.csv") as file:
        events = list(csv.DictReader(file))
    assert [(e["kind"], e["gpu"], e["state"], e["elapsed"]) for e in events] == [
        ("pcie_link", "1", "raised", "1.0"), ("xid", "1", "once", "2.0")]  # fmt: skip
    with open(tmp_path / "out" / "processes.csv") as file:
        (process,) = csv.DictReader(file)
    assert (process["pid"], process["user"], process["job"], process["gpu"]) == (
        "4242",
        "alice",
        "41233",
        "0",
    )
    assert (float(process["first_seen"]), float(process["last_seen"])) == (T0, T0 + 1)
    assert float(process["sm_util_mean"]) == 80.0 and process["own"] == "False"
