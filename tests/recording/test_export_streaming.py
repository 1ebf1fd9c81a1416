"""Export streams: every format's memory is bounded by a chunk, not by the recording. A recording
five times as long costs the same RSS, far less than its rows would take in memory; and the
streamed formats hold exactly the rows the recording holds."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.long_recording import write
from dltui.recording.table_writers import FLUSH_ROWS
from tests.conftest import ROOT, dltui_command

SHORT_S, LONG_S = 60.0, 300.0  # 8 GPUs at 10 Hz: about 100,000 and 530,000 telemetry rows


@pytest.fixture(scope="module")
def recordings(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("long")
    return {name: write(folder / f"{name}.dlrec", seconds, gpus=8, every_s=120.0)
            for name, seconds in (("short", SHORT_S), ("long", LONG_S))}  # fmt: skip


# The export's own high-water mark (VmHWM), printed as it ends. Not the rusage of the child:
# the kernel carries the forking parent's peak across exec, and an xdist worker that ran
# TensorFlow's tests is over a GB.
WITH_PEAK = """import runpy, sys
try:
    runpy.run_module("dltui", run_name="__main__", alter_sys=True)
finally:
    peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    print(peak.strip(), file=sys.stderr)
"""


def peak_rss_of_export(recording: Path, fmt: str, out: Path) -> tuple[int, str]:
    """The export's peak RSS in bytes and what it printed."""
    command = [sys.executable, "-c", WITH_PEAK, "export", str(recording), "--format", fmt]
    done = subprocess.run(
        [*command, "-o", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    kilobytes = int(done.stderr.splitlines()[-1].split()[1])
    return kilobytes * 1024, done.stdout


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet", "openmetrics"])
def test_memory_does_not_grow_with_the_recording(recordings, tmp_path, fmt):
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    short, _ = peak_rss_of_export(recordings["short"], fmt, tmp_path / "short")
    long, printed = peak_rss_of_export(recordings["long"], fmt, tmp_path / "long")
    rows = int(printed.split(": ")[1].split()[0].replace(",", ""))
    assert rows > 500_000 > 5 * FLUSH_ROWS
    # In memory as before (a dict a row, ~600 B each), the long one would take 300 MB more.
    assert long - short < 25e6, (short / 1e6, long / 1e6)
    assert long < 200e6


def rows_of(recording: Path, tmp_path: Path) -> dict[str, list[tuple]]:
    def key(row: dict) -> tuple:
        gpu = "" if row["gpu"] in (None, "") else int(row["gpu"])
        return (row["server"], float(row["time"]), row["scope"], gpu, row["field"],
                float(row["value"]))  # fmt: skip

    found = {}
    assert (
        subprocess.run(
            dltui_command("export", str(recording), "--format", "csv", "-o", str(tmp_path / "csv")),
            cwd=ROOT,
        ).returncode
        == 0
    )
    with open(tmp_path / "csv" / "telemetry.csv", newline="") as file:
        found["csv"] = [key(row) for row in csv.DictReader(file)]
    assert (
        subprocess.run(
            dltui_command(
                "export", str(recording), "--format", "json", "-o", str(tmp_path / "t.json")
            ),
            cwd=ROOT,
        ).returncode
        == 0
    )
    found["json"] = [key(row) for row in json.loads((tmp_path / "t.json").read_text())["telemetry"]]
    return found


def test_csv_json_and_parquet_hold_the_same_rows(recordings, tmp_path):
    found = rows_of(recordings["short"], tmp_path)
    assert found["csv"] == found["json"] and len(found["csv"]) > FLUSH_ROWS
    pq = pytest.importorskip("pyarrow.parquet")
    result = subprocess.run(
        dltui_command(
            "export", str(recordings["short"]), "--format", "parquet", "-o", str(tmp_path / "pq")
        ),
        cwd=ROOT,
    )
    assert result.returncode == 0
    table = pq.read_table(tmp_path / "pq" / "telemetry.parquet").to_pylist()
    assert [(r["server"], r["time"], r["scope"], "" if r["gpu"] is None else r["gpu"],
             r["field"], r["value"]) for r in table] == found["csv"]  # fmt: skip
