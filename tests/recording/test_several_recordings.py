"""Several recordings at once, as export and report take them: each keeps a name of its own,
and none loses points to the order they were given in."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from dltui.recording.export import export
from dltui.recording.format import Header
from dltui.recording.openmetrics import export_openmetrics
from dltui.recording.recorded import load
from dltui.recording.writer import RecordingWriter
from tests.conftest import FIXTURES
from tests.tui.synthetic import server_messages

MONDAY = 1.7e9
FRIDAY = MONDAY + 4 * 86400


def recorded(path: Path, start: float) -> Path:
    writer = RecordingWriter(path, Header("test", start, {"gpu-01": "gpu-01:7070"}))
    for message in server_messages("gpu-01", 1, start, seconds=2.0):
        writer.write("gpu-01", message, getattr(message, "wall", start))
    writer.close()
    assert writer.failure is None
    return path


def test_two_recordings_of_one_file_name_are_told_apart(tmp_path):
    """monday/x.dlrec and friday/x.dlrec were both "x": one plot drew over the other, and
    their rows could not be told apart."""
    paths = []
    for day in ("monday", "friday"):
        (tmp_path / day).mkdir()
        paths.append(Path(shutil.copy(FIXTURES / "cpu-kernels.dlrec", tmp_path / day / "x.dlrec")))
    assert [session.name for session in load(paths, print)] == ["x", "x'"]
    out = tmp_path / "tables.json"
    export(paths, "json", out, print)
    tables = json.loads(out.read_text())
    for table in ("telemetry", "results"):
        names = [row["recording"] for row in tables[table]]
        assert names.count("x") == names.count("x'") > 0, table


def test_openmetrics_keeps_every_point_whichever_recording_comes_first(tmp_path):
    """Given newest first, a series' older points were dropped as out of order, silently."""
    monday = recorded(tmp_path / "monday.dlrec", MONDAY)
    friday = recorded(tmp_path / "friday.dlrec", FRIDAY)
    out = tmp_path / "out.om"
    one = export_openmetrics([monday], out, print)["telemetry"]
    forward = export_openmetrics([monday, friday], out, print)["telemetry"]
    backward = export_openmetrics([friday, monday], out, print)["telemetry"]
    assert one > 0 and forward == backward == 2 * one
