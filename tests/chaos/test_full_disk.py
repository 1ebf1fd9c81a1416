"""A disk that fills, a file system that goes read-only, a file size limit: `dltui record`
stops with one line that says what the file holds, exits 74 (EX_IOERR), and leaves a file that
reads to its last whole chunk (issue #13: a full disk lost every frame after it, silently, and
exited 0). Real file systems where the machine allows (tmpfs and ext4 need root), a real
RLIMIT_FSIZE everywhere; and the writer alone, against /dev/full."""

from __future__ import annotations

import contextlib
import os
import re
import resource
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dltui.commands.exit_status import WRITE_FAILED
from dltui.protocol.messages import ConnectionState
from dltui.recording.format import Header
from dltui.recording.reader import RecordingReader
from dltui.recording.writer import RecordingWriter
from tests.conftest import ROOT, dltui_command, wait_for

STOPPED = re.compile(
    r"dltui record: recording to (\S+) stopped: (.+); the file holds (\d+) frames up to "
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(([\d,]+) bytes\)$"
)


def record_until_it_fails(
    agent, path: Path, limit_size: int | None = None, when_started: Callable[[], None] | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    """Record a fast agent to `path` until the file system refuses a write (60 s at most)."""

    def limit() -> None:
        if limit_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_size, limit_size))

    command = dltui_command("record", "-o", str(path), "--duration", "60", "--rate", "50",
                            agent.address)  # fmt: skip
    began = time.monotonic()
    recorder = subprocess.Popen(command, cwd=ROOT, text=True, stderr=subprocess.PIPE,
                                preexec_fn=limit)  # fmt: skip
    if when_started is not None:
        wait_for(lambda: path.exists() and path.stat().st_size > 2000, timeout=30, what="frames")
        when_started()
    _, stderr = recorder.communicate(timeout=60)
    return subprocess.CompletedProcess(command, recorder.returncode, "", stderr), (
        time.monotonic() - began
    )


def check_stopped_cleanly(
    result, took: float, path: Path, why: tuple[str, ...], torn_tail: bool
) -> None:
    assert result.returncode == WRITE_FAILED, result.stderr
    assert "Traceback" not in result.stderr
    match = STOPPED.match(result.stderr.strip().splitlines()[-1])
    assert match, result.stderr
    assert match[1] == str(path) and match[2] in why
    assert took < 30  # it stops when the write fails, not at --duration
    reader = RecordingReader(path)
    records = reader.read_all()
    assert len(records) == int(match[3]) > 10
    assert isinstance(records[0].message, ConnectionState)
    if torn_tail:  # a read-only file system cannot be cut back: the reader drops the tail
        assert all(d.reason == "file ends inside a chunk" for d in reader.damage), reader.damage
    else:
        assert reader.damage == [] and path.stat().st_size == int(match[4].replace(",", ""))


def test_a_file_size_limit_stops_the_recording(agent_factory, tmp_path):
    agent = agent_factory("--rate", "50")
    path = tmp_path / "limited.dlrec"
    result, took = record_until_it_fails(agent, path, limit_size=6000)
    check_stopped_cleanly(result, took, path, ("File too large",), torn_tail=False)


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, text=True, timeout=30)


@contextlib.contextmanager
def mounted(kind: str, where: Path, *options: str) -> Iterator[Path]:
    """`where` with a file system mounted on it (kind "": mount's own guess, as for a loop
    image), unmounted after; the test is skipped where mounting is not allowed."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a file system needs root and mount(8)")
    where.mkdir()
    typed = ["-t", kind] if kind else []
    try:
        _mount(*typed, *options, where.as_posix())
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"cannot mount {kind or 'a loop device'} here: {exc.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", where.as_posix()], capture_output=True, timeout=30)


def test_a_full_disk_stops_the_recording(agent_factory, tmp_path):
    agent = agent_factory("--rate", "50")
    with mounted("tmpfs", tmp_path / "disk", "-o", "size=32k", "tmpfs") as disk:
        (disk / "filler").write_bytes(b"\0" * 28 * 1024)  # 4 KiB left: a second or two of frames
        path = disk / "full.dlrec"
        result, took = record_until_it_fails(agent, path)
        check_stopped_cleanly(result, took, path, ("No space left on device",), torn_tail=False)


def test_a_file_system_that_goes_read_only_stops_the_recording(agent_factory, tmp_path):
    """ext4 on a loop device, mounted errors=remount-ro; an error triggered by hand makes it
    read-only under the recorder, as a failing disk would."""
    if shutil.which("mkfs.ext4") is None:
        pytest.skip("needs mkfs.ext4")
    image = tmp_path / "ext4.img"
    with open(image, "wb") as file:
        file.truncate(8 << 20)
    subprocess.run(["mkfs.ext4", "-q", str(image)], check=True, capture_output=True, timeout=60)
    agent = agent_factory("--rate", "50")
    with mounted("", tmp_path / "disk", "-o", "loop,errors=remount-ro", str(image)) as disk:
        device = Path(subprocess.run(["findmnt", "-no", "SOURCE", str(disk)], text=True,
                                     capture_output=True, check=True).stdout.strip())  # fmt: skip
        trigger = Path("/sys/fs/ext4") / device.name / "trigger_fs_error"
        if not trigger.exists():
            pytest.skip(f"{trigger} is missing: cannot make ext4 fail here")
        path = disk / "read-only.dlrec"
        result, took = record_until_it_fails(
            agent, path, when_started=lambda: trigger.write_text("a test makes it fail\n")
        )
        # The write that meets the read-only file system, or the fsync of what went before.
        why = ("Read-only file system", "Input/output error")
        check_stopped_cleanly(result, took, path, why, torn_tail=True)


def test_the_writer_stops_on_a_failed_write_and_drops_what_comes_after(tmp_path):
    """/dev/full under the writer's descriptor: every write from then on fails with ENOSPC."""
    failures: list[str] = []
    path = tmp_path / "writer.dlrec"
    writer = RecordingWriter(path, Header("test", 0.0), failures.append)
    for tick in range(40):  # 4 s of records: chunks end every 0.5 s of their own time
        writer.write("a", ConnectionState("live", tick / 10), received=1000.0 + tick / 10)
    wait_for(lambda: writer.records >= 30, what="chunks on disk")
    full = os.open("/dev/full", os.O_WRONLY)
    os.dup2(full, writer._fd)
    os.close(full)
    for tick in range(40, 80):
        writer.write("a", ConnectionState("live", tick / 10), received=1000.0 + tick / 10)
    wait_for(lambda: failures, what="the failure")
    writer.write("a", ConnectionState("live", 9.0), received=1009.0)
    assert writer._queue.empty()  # dropped, not held
    writer.close()
    assert failures == [writer.failure]
    assert "stopped: No space left on device; the file holds" in failures[0]
    records = RecordingReader(path).read_all()
    assert len(records) == writer.records and records[-1].received == writer.written_until
