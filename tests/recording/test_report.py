"""The report from the real fixtures: its figures are the recorded ones, its plots are images."""

from __future__ import annotations

import subprocess
from pathlib import Path

from dltui.formatting import significant
from dltui.protocol.messages import JobResult
from dltui.recording.reader import RecordingReader
from tests.conftest import ROOT, dltui_command

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FILES = [FIXTURES / "h200x2-kernels.dlrec", FIXTURES / "cpu-kernels.dlrec"]
PNG = b"\x89PNG\r\n\x1a\n"


def test_report_of_two_recordings(tmp_path):
    command = dltui_command("report", *map(str, FILES), "-o", str(tmp_path))
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    markdown = (tmp_path / "index.md").read_text()
    page = (tmp_path / "index.html").read_text()
    for path in FILES:
        for record in RecordingReader(path):
            if isinstance(record.message, JobResult) and record.message.result:
                result = record.message.result  # its figure in its unit's column
                figure = significant(result.tflops or result.gbps or 0.0, 4)
                assert f" | {figure} | " in markdown and f"<td>{figure}</td>" in page
    assert "2× NVIDIA H200" in markdown and "| cpu-kernels |" in markdown
    for name in ("throughput.png", "allreduce.png", "telemetry-h200x2-kernels.png"):
        assert (tmp_path / name).read_bytes().startswith(PNG)
        assert f"]({name})" in markdown and f"src='{name}'" in page
    assert not (tmp_path / "telemetry-cpu-kernels.png").exists()  # no GPU, no GPU telemetry
