"""Where dltui writes: a link planted at an output path is replaced, never followed; an
interrupted export leaves no half file; a recording is never written through a link nor over a
file unless asked; and `record` says success only for a file that reads back whole."""

from __future__ import annotations

import json
import resource
import subprocess

import pytest

from dltui import cli
from dltui.commands import exit_status
from dltui.outfiles import Replacement, WriteFailed, write_text
from dltui.recording.export import export
from dltui.recording.format import RecordingError
from dltui.recording.reader import RecordingReader
from dltui.recording.report import write_report
from tests.conftest import FIXTURES, ROOT, dltui_command, start_agent, wait_for
from tests.recordings import seconds_on_disk

RECORDING = FIXTURES / "cpu-kernels.dlrec"
VICTIM = "someone else's file\n"


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "victim"
    path.write_text(VICTIM)
    return path


@pytest.mark.parametrize("fmt", ["csv", "json", "openmetrics"])
def test_export_replaces_a_planted_link_and_never_follows_it(tmp_path, victim, fmt):
    out = tmp_path / ("tables" if fmt == "csv" else f"out.{fmt}")
    if fmt == "csv":
        out.mkdir()
        (out / "telemetry.csv").symlink_to(victim)
        (out / "results.csv").symlink_to(victim)
    else:
        out.symlink_to(victim)
    export([RECORDING], fmt, out, print)
    assert victim.read_text() == VICTIM
    written = [out / "telemetry.csv", out / "results.csv"] if fmt == "csv" else [out]
    for path in written:
        assert not path.is_symlink() and path.stat().st_size > 0
    assert not [p for p in tmp_path.rglob(".*") if p.is_file()]  # no temporary file left


def test_report_replaces_planted_links(tmp_path, victim):
    out = tmp_path / "report"
    out.mkdir()
    for name in ("index.md", "index.html"):
        (out / name).symlink_to(victim)
    write_report([RECORDING], out, print)
    assert victim.read_text() == VICTIM
    assert not (out / "index.md").is_symlink() and "dltui report" in (out / "index.md").read_text()


def test_predicts_json_replaces_a_planted_link_and_never_follows_it(tmp_path, victim):
    link = tmp_path / "table.json"
    link.symlink_to(victim)
    command = dltui_command("predict", "--model", "resnet50", "--batch", "64", "--images-per-s",
                            "220", "--layouts", "1x1", "--json", str(link))  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == VICTIM
    assert not link.is_symlink() and json.loads(link.read_text())["model"] == "resnet50"


def test_a_write_the_file_system_refuses_is_said_as_a_write_failure(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("in the way\n")
    with pytest.raises(WriteFailed, match=r"cannot write .*a-file/out\.json: Not a directory"):
        write_text(a_file / "out.json", "{}")
    assert exit_status.of_error(WriteFailed("x")) == exit_status.WRITE_FAILED
    assert a_file.read_text() == "in the way\n"


def test_an_export_that_fails_midway_leaves_no_half_file(tmp_path):
    """The second recording is not one: the export stops after writing the first's telemetry,
    and neither the JSON file nor a temporary one is left."""
    bad = tmp_path / "bad.dlrec"
    bad.write_bytes(b"not a recording at all")
    out = tmp_path / "out.json"
    out.write_text("the previous export\n")
    with pytest.raises(RecordingError):
        export([RECORDING, bad], "json", out, print)
    assert out.read_text() == "the previous export\n"  # as it was: never half of a new one
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.dlrec", "out.json"]


def test_a_recording_never_writes_through_a_link(tmp_path, victim):
    agent = start_agent()
    try:
        link = tmp_path / "planted.dlrec"
        link.symlink_to(victim)
        command = dltui_command("record", "-o", str(link), "--duration", "1", agent.address)
        refused = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert refused.returncode == 2 and "say --overwrite" in refused.stderr
        asked = subprocess.run([*command, "--overwrite"], capture_output=True, text=True,
                               cwd=ROOT, timeout=60)  # fmt: skip
        assert asked.returncode == 0, asked.stderr
        assert victim.read_text() == VICTIM and not link.is_symlink()
        assert RecordingReader(link).read_all()

        # A recording damaged under the recorder (here by another hand) is no success.
        damaged = tmp_path / "damaged.dlrec"
        recorder = subprocess.Popen([*dltui_command("record", "-o", str(damaged), agent.address,
                                                    "--duration", "3")],
                                    cwd=ROOT, stderr=subprocess.PIPE, text=True)  # fmt: skip
        wait_for(lambda: seconds_on_disk(damaged) > 0.3, timeout=30, what="samples on disk")
        with open(damaged, "r+b") as file:
            file.seek(RecordingReader(damaged).first + 8)
            file.write(b"\xff" * 64)
        _, stderr = recorder.communicate(timeout=60)
        assert recorder.returncode == 74 and "does not read back whole" in stderr, stderr
    finally:
        agent.stop()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["export", "--format", "json", "-o", "{tmp}/victim.dlrec", "{tmp}/victim.dlrec"],
         "victim.dlrec is a recording"),
        (["export", "-o", "{tmp}/victim.dlrec", "{rec}"], "victim.dlrec is not a folder"),
        (["export", "--format", "openmetrics", "-o", "{tmp}", "{rec}"], "is a folder"),
        (["export", "--format", "json", "-o", "{tmp}/no/x.json", "{rec}"], "no is not a folder"),
        (["report", "-o", "{tmp}/victim.dlrec", "{rec}"], "victim.dlrec is not a folder"),
    ],
)  # fmt: skip
def test_an_output_that_cannot_be_written_is_refused_before_any_work(tmp_path, capsys, args,
                                                                     words):  # fmt: skip
    """Each was a traceback once, and the first wrote JSON over the recording it read."""
    kept = RECORDING.read_bytes()
    (tmp_path / "victim.dlrec").write_bytes(kept)
    argv = [arg.format(tmp=tmp_path, rec=RECORDING) for arg in args]
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == exit_status.USAGE and words in capsys.readouterr().err
    assert (tmp_path / "victim.dlrec").read_bytes() == kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["victim.dlrec"]


def test_a_replacement_that_cannot_take_its_place_leaves_no_copy(tmp_path):
    (tmp_path / "taken").mkdir()
    with pytest.raises(IsADirectoryError), Replacement(tmp_path / "taken") as replacement:
        replacement.path.write_text("tables")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_an_export_the_file_size_limit_stops_is_a_write_failure(tmp_path):
    """As a full disk would: exit 74 and one line, the old file kept, no copy left."""
    out = tmp_path / "tables.json"
    out.write_text("the previous export\n")
    limit = 20 * 1024

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    command = dltui_command("export", "--format", "json", "-o", str(out), str(RECORDING))
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60,
                          preexec_fn=small_files)  # fmt: skip
    assert done.returncode == exit_status.WRITE_FAILED
    assert done.stderr == f"dltui export: cannot write {out}: File too large\n"
    assert out.read_text() == "the previous export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tables.json"]
