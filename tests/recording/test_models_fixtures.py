"""The real training recordings: `h200-models.dlrec` (ResNet-50, VGG-16, GoogLeNet, AlexNet on
one H200, recorded by the lead; format version 1) and `cpu-models.dlrec` (AlexNet on one and
two CPU processes on this machine in bf16 at batch 512, as the H200 ran it, so the two compare
like with like: `dltui record --plan tests/fixtures/cpu-models.toml`; format version 2).
Export and report hold exactly the recorded figures."""

from __future__ import annotations

import csv
import subprocess
from pathlib import Path

import pytest

from dltui.fleet.state import Fleet
from dltui.formatting import significant
from dltui.protocol.bench_results import ModelResult
from dltui.protocol.messages import JobResult
from dltui.recording.phases import phases
from dltui.recording.reader import RecordingReader
from dltui.recording.replay import ReplaySet, load_tracks
from dltui.result_text import images_text
from tests.conftest import ROOT, dltui_command

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
H200 = FIXTURES / "h200-models.dlrec"
CPU = FIXTURES / "cpu-models.dlrec"


def runs(path: Path) -> list[ModelResult]:
    return [r.message.model for r in RecordingReader(path)
            if isinstance(r.message, JobResult) and r.message.model]  # fmt: skip


def test_export_holds_every_run_and_every_step(tmp_path):
    command = dltui_command("export", str(H200), str(CPU), "-o", str(tmp_path))
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    with open(tmp_path / "models.csv") as file:
        models = list(csv.DictReader(file))
    recorded = runs(H200) + runs(CPU)
    assert [(m["model"], int(m["gpus"]), float(m["images_per_s"])) for m in models] == [
        (r.model, r.gpus, r.images_per_s) for r in recorded
    ]
    one, two = runs(CPU)
    assert float(models[-1]["efficiency_vs_one_gpu"]) == pytest.approx(
        two.images_per_s / (2 * one.images_per_s)
    )
    with open(tmp_path / "steps.csv") as file:
        steps = [float(row["seconds"]) for row in csv.DictReader(file)]
    assert steps == [t for r in recorded for t in r.step_times] and len(steps) == 406


def test_the_report_measures_power_over_the_timed_steps_not_the_compile(tmp_path):
    command = dltui_command("report", str(H200), str(CPU), "-o", str(tmp_path))
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    markdown = (tmp_path / "index.md").read_text()
    for run in runs(H200) + runs(CPU):
        assert images_text(run.images_per_s) in markdown
    resnet = next(p for p in phases(RecordingReader(H200).read_all())
                  if p.result.model == "resnet50")  # fmt: skip
    # Compiling took a minute at about 116 W; the 100 timed steps drew about 690 W.
    assert resnet.end - resnet.start == pytest.approx(sum(resnet.result.step_times))
    assert resnet.watts > 500 and resnet.telemetry["util_gpu"] > 90
    row = next(line for line in markdown.splitlines() if "resnet50 ×1 GPU" in line)
    assert f"| {significant(resnet.watts, 3)} | {significant(resnet.per_watt, 3)} |" in row
    for name in ("training.png", "scaling.png", "per-watt.png", "telemetry-h200-models.png"):
        assert (tmp_path / name).stat().st_size > 1000, name


def test_the_cpu_training_recording_replays_and_seeks():
    replay = ReplaySet(load_tracks([CPU]), Fleet())
    assert len(replay.case_starts()) == 2  # one run on one process, one on two
    replay.seek(replay.length)
    (server,) = replay.fleet.servers.values()
    job = server.latest_job
    assert job is not None and job.state == "done"
    assert [m.images_per_s for m in job.model_results] == [r.images_per_s for r in runs(CPU)]
    replay.seek(replay.case_starts()[1] + 0.5)  # back, into the two-process run
    assert server.latest_job.state == "running" and len(server.latest_job.model_results) == 1


def test_the_demo_pair_shares_a_training_configuration():
    from dltui.fleet.compare import model_row

    shared = {model_row(r)[0] for r in runs(H200)} & {model_row(r)[0] for r in runs(CPU)}
    assert shared == {("model", "torch", "alexnet", "bf16", 512, 224, "synthetic", None, None)}
