"""Export of the real fixtures: the tables hold exactly what the recording holds."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

from dltui.protocol.messages import JobResult, Sample
from dltui.recording.reader import RecordingReader
from tests.conftest import ROOT, dltui_command

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
H200 = FIXTURES / "h200x2-kernels.dlrec"


def export(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(dltui_command("export", *args), capture_output=True, text=True,
                          cwd=ROOT, timeout=120)  # fmt: skip


def test_csv_tables_match_the_recording(tmp_path):
    result = export(str(H200), "--format", "csv", "-o", str(tmp_path))
    assert result.returncode == 0, result.stderr
    records = RecordingReader(H200).read_all()
    samples = [r.message for r in records if isinstance(r.message, Sample)]
    results = [r.message.result for r in records if isinstance(r.message, JobResult)]
    with open(tmp_path / "results.csv") as file:
        rows = list(csv.DictReader(file))
    assert [(row["shape"], float(row["median_s"])) for row in rows] == [
        (r.shape, r.median_s) for r in results
    ]
    with open(tmp_path / "telemetry.csv") as file:
        power = [row for row in csv.DictReader(file)
                 if row["field"] == "power" and row["gpu"] == "1"]  # fmt: skip
    expected = [g.values["power"] for s in samples for g in s.gpus
                if g.index == 1 and "power" in g.values]  # fmt: skip
    assert [float(row["value"]) for row in power] == expected and len(expected) > 100


def test_json_of_two_recordings_and_a_clear_error(tmp_path):
    out = tmp_path / "both.json"
    cpu = FIXTURES / "cpu-kernels.dlrec"
    assert export(str(H200), str(cpu), "--format", "json", "-o", str(out)).returncode == 0
    document = json.loads(out.read_text())
    assert {row["recording"] for row in document["results"]} == {"h200x2-kernels", "cpu-kernels"}
    bogus = tmp_path / "x.dlrec"
    bogus.write_bytes(b"nothing")
    failed = export(str(bogus), "-o", str(tmp_path / "x"))
    assert failed.returncode == 2 and "not a dltui recording" in failed.stderr
