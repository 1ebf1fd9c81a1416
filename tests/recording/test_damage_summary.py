"""Damage in a few words, however much there is: a zeroed block in a version 1 file is one
stretch of damage, not hundreds of valid empty records (eight zero bytes were one: length 0,
and the CRC-32 of nothing is 0), and every damage line is summarised (issue #13: a zeroed
4 KiB block gave 512 entries and a 56 KB line)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from dltui.protocol.messages import Ping
from dltui.recording.format import Header, Record, decode_header, encode_header, encode_record
from dltui.recording.reader import RecordingReader
from tests.conftest import FIXTURES, ROOT, dltui_command

FIXTURE = ROOT / "tests" / "fixtures" / "h200x2-kernels.dlrec"  # version 1
SHORT = 300


def damaged_copy(tmp_path: Path, change) -> tuple[Path, int]:
    """The version 1 fixture with `change(bytearray, first record offset)` applied; its path
    and how many records the intact file holds."""
    intact = len(RecordingReader(FIXTURE).read_all())
    data = bytearray(FIXTURE.read_bytes())
    _, version, first = decode_header(bytes(data))
    assert version == 1
    change(data, first)
    path = tmp_path / "damaged.dlrec"
    path.write_bytes(bytes(data))
    return path, intact


def test_a_zeroed_block_is_one_stretch_of_damage(tmp_path):
    def zero(data: bytearray, first: int) -> None:
        data[first + 50_000 : first + 50_000 + 4096] = bytes(4096)

    path, intact = damaged_copy(tmp_path, zero)
    reader = RecordingReader(path)
    records = reader.read_all()
    assert intact - 12 < len(records) < intact  # the records the block overwrote, no more
    assert len(reader.damage) <= 2  # the block, and the record it cut into at its start
    assert sum(d.skipped for d in reader.damage) < 4096 + 2 * 2048
    line = reader.damage_report()
    assert line is not None and len(line) - len(str(path)) < SHORT, line


def test_zeros_between_records_are_no_records(tmp_path):
    def insert(data: bytearray, first: int) -> None:
        data[first:first] = bytes(4096)

    path, intact = damaged_copy(tmp_path, insert)
    reader = RecordingReader(path)
    assert len(reader.read_all()) == intact
    (damage,) = reader.damage
    assert (damage.reason, damage.skipped) == ("no record here", 4096)


def test_hundreds_of_damaged_places_make_one_short_line(tmp_path):
    data = bytearray(encode_header(Header("test", 1.7e9), version=1))
    for index in range(1000):
        record = bytearray(encode_record(Record(1.7e9 + index, "a", Ping(index + 1, index))))
        if index % 2:
            record[-1] ^= 0x41  # every other record fails its checksum
        data += record
    path = tmp_path / "flipped.dlrec"
    path.write_bytes(bytes(data))
    reader = RecordingReader(path)
    assert len(reader.read_all()) == 500 and len(reader.damage) == 500
    line = reader.damage_report()
    assert line is not None and len(line) - len(str(path)) < SHORT, line
    assert "500 damaged places at bytes" in line and "and 497 more" in line
    assert "checksum mismatch (×500)" in line


def test_export_says_it_in_one_short_line(tmp_path):
    def zero(data: bytearray, first: int) -> None:
        for start in range(first + 20_000, len(data) - 8192, 40_000):
            data[start : start + 4096] = bytes(4096)

    path, _ = damaged_copy(tmp_path, zero)
    result = subprocess.run(
        dltui_command("export", str(path), "--format", "json", "-o", str(tmp_path / "out.json")),
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if "damaged" in line]
    assert len(line) - len(str(path)) < SHORT, line


def test_a_truncated_recording_says_where_and_that_the_rest_is_intact(tmp_path):
    """Cut short inside a chunk, and inside the header: each says so in its words, through
    the real command, and the first keeps every frame before the cut."""
    whole = (FIXTURES / "cpu-kernels.dlrec").read_bytes()
    first = decode_header(whole)[2]
    path = tmp_path / "cut.dlrec"
    path.write_bytes(whole[: len(whole) * 2 // 3])
    reader = RecordingReader(path)
    kept = reader.read_all()
    assert kept and kept == RecordingReader(FIXTURES / "cpu-kernels.dlrec").read_all()[: len(kept)]
    out = tmp_path / "out.json"
    result = subprocess.run(dltui_command("export", str(path), "--format", "json", "-o", str(out)),
                            capture_output=True, text=True, cwd=ROOT, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"{path}: truncated at byte {len(whole) * 2 // 3:,}, inside what was begun at byte" in (
        result.stderr
    )
    assert "the frames before it are intact" in result.stderr
    path.write_bytes(whole[: first - 5])
    result = subprocess.run(dltui_command("export", str(path), "--format", "json", "-o", str(out)),
                            capture_output=True, text=True, cwd=ROOT, timeout=60)  # fmt: skip
    assert result.returncode == 2
    assert f"truncated at byte {first - 5:,}, inside its header" in result.stderr
