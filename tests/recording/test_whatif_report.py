"""The report's what-if section, from the real recording of AlexNet profiled on one CPU process
with a Gloo all-reduce (`dltui record --plan tests/fixtures/cpu-whatif.toml`): the table's
figures are the predictor's, the measured ones the recorded ones, and its chart an image."""

from __future__ import annotations

import subprocess
from pathlib import Path

from dltui.fleet.compare import results_by_server
from dltui.fleet.state import Fleet
from dltui.recording.reader import RecordingReader
from dltui.recording.results import recorded_results
from dltui.recording.whatif import (
    NETWORK_GBIT,
    images,
    layouts_for,
    step_network,
    what_if_view,
)
from tests.conftest import ROOT, dltui_command

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
WHATIF = FIXTURES / "cpu-whatif.dlrec"
PNG = b"\x89PNG\r\n\x1a\n"


def test_report_has_a_whatif_section_with_its_sources_and_chart(tmp_path):
    command = dltui_command("report", str(WHATIF), "-o", str(tmp_path))
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    markdown = (tmp_path / "index.md").read_text()
    page = (tmp_path / "index.html").read_text()
    kernels, models = recorded_results(WHATIF)
    view = what_if_view(kernels, models, "alexnet")
    for text in (markdown, page):
        assert "What-if (predicted): alexnet, batch 4 a GPU" in text
        assert "predicted images/s" in text and "measured images/s" in text
        for source in view.table.sources:  # what every figure came from
            assert source in text
        assert "between servers: described: 100 Gbit/s tcp at 70%" in text
    rows = {line.split(" | ")[0].lstrip("| "): line for line in markdown.splitlines()
            if line.startswith("| ") and "×" in line.split(" | ")[0]}  # fmt: skip
    assert list(rows) == ["1×1", "1×2", "1×8", "2×4", "4×2", "8×1", "16×8", "64×8"]
    for row in view.table.rows:
        line = rows[str(row.prediction.layout)]
        assert f"| {images(row.prediction.images_per_s)} |" in line
    one = next(m for _, m in models if m.gpus == 1 and m.profile is not None)
    assert f"| {images(one.images_per_s or 0)} |" in rows["1×1"]  # measured, beside
    assert "![What-if (predicted): alexnet, batch 4 a GPU](whatif-alexnet.png)" in markdown
    assert "<img src='whatif-alexnet.png'" in page
    assert (tmp_path / "whatif-alexnet.png").read_bytes().startswith(PNG)


def test_the_report_predicts_over_the_network_measured_between_two_hosts(tmp_path):
    """With a second recording of an all-reduce across two agents, the table is over the
    measured network, and the report reads the two recordings' results together."""
    two = FIXTURES / "cpu-allreduce-2hosts.dlrec"
    command = dltui_command("report", str(WHATIF), str(two), "-o", str(tmp_path))
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    markdown = (tmp_path / "index.md").read_text()
    assert "between servers: measured: gloo all-reduce, 2 servers, 4 sizes" in markdown
    assert "described" not in markdown
    assert (tmp_path / "whatif-alexnet.png").read_bytes().startswith(PNG)


def test_report_without_a_profile_has_no_whatif_section(tmp_path):
    command = dltui_command("report", str(FIXTURES / "cpu-kernels.dlrec"), "-o", str(tmp_path))
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "What-if" not in (tmp_path / "index.md").read_text()
    assert not list(tmp_path.glob("whatif-*.png"))


def test_the_network_steps_along_common_line_rates_and_stops_at_the_ends():
    kernels, models = recorded_results(WHATIF)
    view = what_if_view(kernels, models, "alexnet")
    assert view.network_gbit == 100 and view.measured_gbit is None  # none measured: described
    seen = []
    for _ in range(len(NETWORK_GBIT) + 1):
        view = what_if_view(kernels, models, "alexnet", step_network(view, 1))
        seen.append(view.network_gbit)
    assert seen == [200, 400, 800, 800, 800, 800, 800]
    for _ in range(len(NETWORK_GBIT) + 1):
        view = what_if_view(kernels, models, "alexnet", step_network(view, -1))
    assert view.network_gbit == NETWORK_GBIT[0]


def test_the_layouts_are_the_default_ones_and_those_measured():
    kernels, models = recorded_results(WHATIF)
    shown = [str(layout) for layout in layouts_for(kernels, models, "alexnet")]
    assert shown == ["1×1", "1×2", "1×8", "2×4", "4×2", "8×1", "16×8", "64×8"]
    assert [str(layout) for layout in layouts_for(kernels, models, "vgg16")] == [
        "1×1", "1×8", "2×4", "4×2", "8×1", "16×8", "64×8"
    ]  # fmt: skip


def test_the_fleet_gives_the_what_if_screen_the_results_a_recording_gives_the_report():
    fleet = Fleet()
    for record in RecordingReader(WHATIF):
        fleet.apply(record.source, record.message)
    kernels, models = results_by_server(fleet)
    assert (kernels, models) == recorded_results(WHATIF)
    assert len(models) == 2 and len(kernels) > 1
