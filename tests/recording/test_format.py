"""Version 1 of the recording format (the first fixtures are version 1, and are still read)
against the damage files meet: cuts, flipped bytes, foreign files."""

from __future__ import annotations

import pytest

from dltui.protocol.messages import ConnectionState, Ping, Sample
from dltui.protocol.samples import HostSample
from dltui.recording.format import (
    Header,
    Record,
    RecordDecoder,
    RecordingError,
    decode_header,
    encode_header,
    encode_record,
)
from dltui.recording.reader import RecordingReader, describe_damage

HEADER = Header("0.1.0", 1.7e9, {"a": "gpu-01:7070"}, "test")
RECORDS = [
    Record(1.7e9 + i, "a", message)
    for i, message in enumerate(
        [
            ConnectionState("live", 1.7e9),
            Sample(1, 1.7e9, 5.0, HostSample({"cpu": 12.5}, [10.0, 15.0])),
            Ping(3, 9),
            Sample(2, 1.7e9 + 0.1, 5.1, HostSample({"cpu": 50.0}, [40.0, 60.0])),
        ]
    )
]


def file_bytes() -> tuple[bytes, list[int]]:
    """A whole small version 1 recording, and the offset where each record ends."""
    data = encode_header(HEADER, version=1)
    ends = []
    for record in RECORDS:
        data += encode_record(record)
        ends.append(len(data))
    return data, ends


def decode(data: bytes) -> tuple[list[Record], RecordDecoder]:
    header, version, first = decode_header(data)
    assert header == HEADER and version == 1
    decoder = RecordDecoder(first)
    records = decoder.feed(data[first:])
    records += decoder.finish()
    return records, decoder


def test_round_trip_in_pieces_of_every_size():
    data, _ = file_bytes()
    _, _, first = decode_header(data)
    for piece in (1, 7, 64, len(data)):
        decoder = RecordDecoder(first)
        records = []
        for start in range(first, len(data), piece):
            records += decoder.feed(data[start : start + piece])
        records += decoder.finish()
        assert records == RECORDS and decoder.damage == []


def test_cut_at_every_byte_keeps_the_longest_valid_prefix():
    data, ends = file_bytes()
    _, _, first = decode_header(data)
    for cut in range(first, len(data) + 1):
        records, decoder = decode(data[:cut])
        whole = sum(end <= cut for end in ends)
        assert records == RECORDS[:whole], cut
        torn = cut not in (first, *ends)
        assert bool(decoder.damage) == torn, cut
        if torn:
            assert decoder.damage[0].reason == "file ends inside a record"
            assert decoder.damage[0].offset == ([first, *ends][whole])


def test_a_flipped_byte_costs_only_its_record():
    data, ends = file_bytes()
    _, _, first = decode_header(data)
    starts = [first, *ends[:-1]]
    for position in range(first, len(data)):
        damaged = bytearray(data)
        damaged[position] ^= 0x41
        records, decoder = decode(bytes(damaged))
        hit = max(i for i, start in enumerate(starts) if start <= position)
        assert records == RECORDS[:hit] + RECORDS[hit + 1 :], position
        assert decoder.damage and decoder.damage[0].offset == starts[hit]


def test_a_version_1_file_on_disk(tmp_path):
    path = tmp_path / "session.dlrec"
    data, _ = file_bytes()
    path.write_bytes(data)
    reader = RecordingReader(path)
    assert reader.version == 1 and reader.header == HEADER
    assert reader.read_all() == RECORDS and reader.damage_report() is None
    with open(path, "ab") as file:
        file.write(b"\x00\x00\x01")  # a torn tail
    reader = RecordingReader(path)
    assert reader.read_all() == RECORDS
    assert "file ends inside a record" in describe_damage(reader.damage)
    assert reader.damage_report() == (f"{path}: truncated at byte {len(data) + 3:,}, inside "
                                      f"what was begun at byte {len(data):,}; the frames "
                                      "before it are intact")  # fmt: skip


def test_a_file_that_is_not_there_or_not_a_recording(tmp_path):
    with pytest.raises(RecordingError, match="cannot read"):
        RecordingReader(tmp_path / "missing.dlrec")
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    with pytest.raises(RecordingError, match="not a dltui recording"):
        RecordingReader(other)
