"""Training runs in export and report, on frames as the training benchmark sends them, laid over
the real telemetry of the H200 fixture: the figures are the recorded ones, the derived ones
(efficiency, power, images/s per watt) are computed from the recorded frames."""

from __future__ import annotations

import csv
import json
import statistics
import subprocess
from pathlib import Path

import pytest

from dltui.protocol.bench_results import ModelResult
from dltui.protocol.messages import JobEnd, JobProgress, JobResult, Sample
from dltui.recording.format import Record
from dltui.recording.phases import phases
from dltui.recording.reader import RecordingReader
from dltui.recording.writer import RecordingWriter
from tests.conftest import ROOT, dltui_command

H200 = Path(__file__).resolve().parents[1] / "fixtures/h200x2-kernels.dlrec"
PNG = b"\x89PNG\r\n\x1a\n"


def run(gpus: int, rate: float | None, error: str | None = None) -> ModelResult:
    """A run of 4 timed steps of 500 images a GPU."""
    return ModelResult("alexnet", "torch", "cuda", "bf16", gpus, 500, image_size=224, steps=4,
                       images_per_s=rate, spread=None if rate is None else rate / 50,
                       step_times=[500 * gpus / rate] * 4 if rate else [], error=error)  # fmt: skip


@pytest.fixture(scope="module")
def training_recording(tmp_path_factory) -> Path:
    """The fixture's telemetry with a scale-up sweep (1 and 2 GPUs, then a failed run) in place
    of its kernel job."""
    records = RecordingReader(H200).read_all()
    start = records[0].received
    frames = [
        (2.0, JobProgress("sweep", 0, 3, "alexnet 1 GPU")),
        (4.0, JobProgress("sweep", 0, 3, "alexnet 1 GPU", fraction=0.5)),
        (6.0, JobResult("sweep", model=run(1, 1000.0))),
        (7.0, JobProgress("sweep", 1, 3, "alexnet 2 GPUs")),
        (12.0, JobResult("sweep", model=run(2, 1800.0))),
        (13.0, JobProgress("sweep", 2, 3, "alexnet 4 GPUs")),
        (14.0, JobResult("sweep", model=run(4, None, "needs 4 GPUs, the server has 2"))),
        (15.0, JobEnd("sweep", "done", wall=start + 15)),
    ]
    kept = [r for r in records if not isinstance(r.message, JobProgress | JobResult | JobEnd)]
    added = [Record(start + at, kept[0].source, message) for at, message in frames]
    path = tmp_path_factory.mktemp("training") / "h200-training.dlrec"
    writer = RecordingWriter(path, RecordingReader(H200).header)
    for record in sorted(kept + added, key=lambda r: r.received):
        writer.write(record.source, record.message, record.received)
    writer.close()
    return path


def power_between(path: Path, start: float, end: float, gpus: int) -> float:
    """The mean over the samples in [start, end] of the power summed over GPUs 0..gpus-1."""
    return statistics.fmean(
        sum(g.values["power"] for g in r.message.gpus if g.index < gpus)
        for r in RecordingReader(path)
        if isinstance(r.message, Sample) and start <= r.received <= end
    )


def test_a_training_run_is_the_phase_of_its_timed_steps(training_recording):
    records = RecordingReader(training_recording).read_all()
    found = [p for p in phases(records) if isinstance(p.result, ModelResult)]
    start = records[0].received
    spans = [t - start for p in found for t in (p.start, p.end)]
    # From its result back by its step times (4 × 0.5 s; 4 × 0.556 s); the failed run, which
    # timed no steps, from its progress frame (the 0.5 progress frame starts no phase).
    assert spans == pytest.approx([4, 6, 12 - 4 * 1000 / 1800, 12, 13, 14], abs=1e-6)
    one, two, _ = found
    assert one.telemetry["power"] == pytest.approx(
        power_between(training_recording, start + 4, start + 6, 1)
    )
    assert two.telemetry["power"] == pytest.approx(
        power_between(training_recording, two.start, start + 12, 2)
    )
    # Per watt: of the energy counter's power where it moved enough, which agrees with sampling.
    assert one.watts == pytest.approx(one.telemetry["power"], rel=0.15)
    assert one.per_watt == pytest.approx(1000.0 / one.watts) and one.tflops_per_watt is None


def test_export_has_a_models_table_and_its_steps_long_form(training_recording, tmp_path):
    command = dltui_command("export", str(training_recording), "--format", "csv",
                            "-o", str(tmp_path / "csv"))  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "3 training runs (8 steps)" in result.stdout
    with open(tmp_path / "csv" / "models.csv") as file:
        models = list(csv.DictReader(file))
    assert [(m["gpus"], m["images_per_s"]) for m in models] == [
        ("1", "1000.0"), ("2", "1800.0"), ("4", ""),
    ]  # fmt: skip
    assert models[1]["efficiency_vs_one_gpu"] == "0.9" and models[0]["efficiency_vs_one_gpu"] == ""
    assert models[2]["error"] == "needs 4 GPUs, the server has 2"
    with open(tmp_path / "csv" / "steps.csv") as file:
        steps = list(csv.DictReader(file))
    assert [(s["gpus"], s["step"]) for s in steps] == [("1", str(i)) for i in range(4)] + [
        ("2", str(i)) for i in range(4)
    ]
    assert float(steps[4]["seconds"]) == pytest.approx(500 * 2 / 1800.0)
    out = tmp_path / "all.json"
    command = dltui_command("export", str(training_recording), "--format", "json", "-o", str(out))
    assert subprocess.run(command, capture_output=True, cwd=ROOT, timeout=120).returncode == 0
    document = json.loads(out.read_text())
    assert len(document["models"]) == 3 and len(document["steps"]) == 8
    assert "step_times" not in document["models"][0] and document["results"] == []


def test_report_shows_throughput_scaling_efficiency_and_per_watt(training_recording, tmp_path):
    command = dltui_command("report", str(training_recording), "-o", str(tmp_path))
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    markdown = (tmp_path / "index.md").read_text()
    start = RecordingReader(training_recording).read_all()[0].received
    power = power_between(training_recording, start + 12 - 4 * 1000 / 1800, start + 12, 2)
    row = next(line for line in markdown.splitlines() if "alexnet ×2 GPUs" in line).split(" | ")
    assert "1,800.0" in row and "90.0%" in row
    heading = next(line for line in markdown.splitlines() if "| per W |" in line)
    watts = heading.split(" | ").index("power W")  # one unit per column, named in its heading
    shown = float(row[watts])
    assert shown == pytest.approx(power, rel=0.15)  # the energy counter's, or the samples'
    assert float(row[watts + 1]) == pytest.approx(1800.0 / shown, rel=0.01)
    assert "needs 4 GPUs, the server has 2" in markdown
    assert "## Kernel results" not in markdown  # no kernel case in this recording
    for name in ("training.png", "scaling.png", "per-watt.png", "telemetry-h200-training.png"):
        assert (tmp_path / name).read_bytes().startswith(PNG), name
        assert f"]({name})" in markdown
