"""Version 2 of the recording format (compressed stretches behind keyframes) against the damage
files meet: cuts at every byte, flipped bytes, bombs, forged records, foreign and newer files."""

from __future__ import annotations

import os
import stat
import struct
import zlib
from dataclasses import dataclass, replace

import msgpack
import pytest

from dltui.fleet.state import Fleet
from dltui.protocol.bench_results import KernelResult
from dltui.protocol.messages import ConnectionState, JobProgress, JobResult, Pong, Sample
from dltui.protocol.samples import GpuSample, HostSample
from dltui.protocol.wire import to_wire
from dltui.recording.chunks import DATA, HEADER_SIZE, KEYFRAME, START, Chunk, encode_chunk, scan
from dltui.recording.codec import StretchDecoder
from dltui.recording.format import MAGIC, Header, Record, RecordingError, decode_header
from dltui.recording.reader import RecordingReader
from dltui.recording.replay import ReplaySet, load_tracks
from dltui.recording.timeline import Timeline
from dltui.recording.writer import FLUSH_INTERVAL, STRETCH_S, RecordingWriter

HEADER = Header("0.1.0", 1.7e9, {"a": "gpu-01:7070"}, "test")
T0 = 1.7e9


def sample(seq: int, power: float) -> Sample:
    gpu = GpuSample(0, "ok", {"power": power, "util_gpu": 40, "temp": 41})
    return Sample(seq, T0 + seq, 5.0 + seq, HostSample({"cpu": 12.5 + seq % 3}, [10.0]), [gpu])


def session() -> list[Record]:
    """Three stretches of a small session: samples (some close enough to share a chunk), a pong,
    links and a job's frames."""
    result = KernelResult("gemm", "torch", "cpu", "fp32", "fwd", "64x64x64 NN", tflops=0.1)
    records = [Record(T0, "a", ConnectionState("live", T0, rtt=0.001, offset=0.0))]
    times = (0.1, 0.2, 0.4, 3, 6, 9.9, 10.1, 10.3, 14, 19, 20.5, 20.6, 25)
    for seq, at in enumerate(times, 1):
        t = T0 + at * STRETCH_S / 10
        records.append(Record(t, "a", sample(seq, 100.0 + seq % 4)))
        if seq == 3:
            records.append(Record(t, "a", Pong(seq, t, 5.0)))
        if seq == 5:
            records.append(Record(t, "a", JobProgress("j1", 0, 1, "gemm 64x64x64")))
        if seq == 10:
            records.append(Record(t, "a", JobResult("j1", result=result)))
    return records


@dataclass
class Layout:
    """The chunks of a written file, and which records each holds."""

    data: bytes
    first: int
    chunks: list[tuple[Chunk, int, list[Record]]]
    """Each chunk, the stretch it belongs to, and its records."""


def write(path, records: list[Record]) -> Layout:
    writer = RecordingWriter(path, HEADER)
    for record in records:
        writer.write(record.source, record.message, record.received)
    writer.close()
    data = path.read_bytes()
    _, _, first = decode_header(data)
    chunks = []
    stretch, decoder = -1, StretchDecoder()
    with open(path, "rb") as file:
        for chunk in scan(file, first, len(data)):
            assert isinstance(chunk, Chunk)
            payload = data[chunk.offset + HEADER_SIZE : chunk.end]
            held: list[Record] = []
            if chunk.kind == START:
                stretch, decoder = stretch + 1, StretchDecoder()
            if chunk.kind != KEYFRAME:
                held, dropped = decoder.chunk(payload)
                assert dropped == []
            chunks.append((chunk, stretch if chunk.kind != KEYFRAME else stretch + 1, held))
    return Layout(data, first, chunks)


@pytest.fixture(scope="module")
def layout(tmp_path_factory) -> Layout:
    return write(tmp_path_factory.mktemp("v2") / "small.dlrec", session())


def read(path, data: bytes) -> RecordingReader:
    path.write_bytes(data)
    reader = RecordingReader(path)
    reader.read_all()
    return reader


def test_round_trip_through_the_writer(tmp_path, layout):
    records = session()
    path = tmp_path / "session.dlrec"
    path.write_bytes(layout.data)
    reader = RecordingReader(path)
    assert reader.version == 2 and reader.header == HEADER
    assert reader.read_all() == records and reader.damage == []
    kinds = [chunk.kind for chunk, _, _ in layout.chunks]
    assert kinds.count(KEYFRAME) == kinds.count(START) == 3 and DATA in kinds
    # A chunk holds at most FLUSH_INTERVAL of records, a stretch at most STRETCH_S.
    for _, _, held in layout.chunks:
        if held:
            assert held[-1].received - held[0].received < FLUSH_INTERVAL
    by_stretch: dict[int, list[Record]] = {}
    for _, stretch, held in layout.chunks:
        by_stretch.setdefault(stretch, []).extend(held)
    assert all(rs[-1].received - rs[0].received < STRETCH_S for rs in by_stretch.values())


def test_the_writer_makes_a_private_file_and_never_overwrites(tmp_path):
    path = tmp_path / "private.dlrec"
    writer = RecordingWriter(path, HEADER)
    writer.write("a", sample(1, 1.0), T0)
    writer.close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert writer.records == 1 and writer.bytes_written == path.stat().st_size
    with pytest.raises(FileExistsError):
        RecordingWriter(path, HEADER)


def test_cut_at_every_byte_keeps_every_whole_chunk(tmp_path, layout):
    path = tmp_path / "cut.dlrec"
    for cut in range(layout.first, len(layout.data) + 1):
        reader = read(path, layout.data[:cut])
        whole = [r for chunk, _, held in layout.chunks if chunk.end <= cut for r in held]
        assert reader.read_all() == whole, cut
        torn = [chunk for chunk, _, _ in layout.chunks if chunk.offset < cut < chunk.end]
        assert [(d.offset, d.reason) for d in reader.damage] == [
            (chunk.offset, "file ends inside a chunk") for chunk in torn
        ], cut
        timeline = Timeline(path)  # and it still opens for replay, as long as what is left
        assert timeline.end == (whole[-1].received if whole else timeline.start), cut


def test_a_flipped_byte_costs_at_most_the_rest_of_its_stretch(tmp_path, layout):
    path = tmp_path / "flipped.dlrec"
    intact = Timeline(_written(tmp_path / "intact.dlrec", layout.data))
    for position in range(layout.first, len(layout.data)):
        damaged = bytearray(layout.data)
        damaged[position] ^= 0x41
        reader = read(path, bytes(damaged))
        index, (hit, stretch, _) = next((i, c) for i, c in enumerate(layout.chunks)
                                        if c[0].offset <= position < c[0].end)  # fmt: skip
        lost = set()
        if hit.kind != KEYFRAME:  # that chunk and the rest of its stretch
            lost = {id(r) for c in layout.chunks[index:] if c[1] == stretch for r in c[2]}
        expected = [r for c in layout.chunks for r in c[2] if id(r) not in lost]
        assert reader.read_all() == expected, position
        assert reader.damage and reader.damage[0].offset == hit.offset, position
        timeline = Timeline(path)
        if hit.kind == KEYFRAME:  # a lost keyframe is rebuilt from the records before it
            assert timeline.jobs == intact.jobs, position
            assert [s.offset for s in timeline.stretches] == [s.offset for s in intact.stretches]


def test_damage_that_opening_does_not_read_is_told_when_the_replay_meets_it(tmp_path, layout):
    chunk = next(c for c, stretch, held in layout.chunks if c.kind == DATA and stretch == 0)
    damaged = bytearray(layout.data)
    damaged[chunk.end - 1] ^= 0x41  # a payload byte: the header still checks out
    replay = ReplaySet(load_tracks([_written(tmp_path / "late.dlrec", bytes(damaged))]), Fleet())
    (track,) = replay.tracks
    assert track.damage is None  # opening hops over that chunk without reading it
    replay.tick(STRETCH_S * 3)
    assert f"at bytes {chunk.offset:,}–" in (track.damage or "")
    assert "chunk checksum mismatch" in (track.damage or "")


def _written(path, data: bytes):
    path.write_bytes(data)
    return path


def test_foreign_newer_and_damaged_headers_are_clear_errors(tmp_path, layout):
    with pytest.raises(RecordingError, match="not a dltui recording"):
        decode_header(b"PK\x03\x04 a zip file")
    for version, words in ((3, "version 3 is newer than this dltui reads"), (0, "does not exist")):
        other = bytearray(layout.data)
        other[len(MAGIC) : len(MAGIC) + 2] = struct.pack(">H", version)
        with pytest.raises(RecordingError, match=words):
            decode_header(bytes(other))
    broken = bytearray(layout.data)
    broken[layout.first - 1] ^= 1
    with pytest.raises(RecordingError, match="header is damaged"):
        read(tmp_path / "broken.dlrec", bytes(broken))
    # Damage is not taken for a newer dltui's file, nor a short file for a foreign one.
    garbage = MAGIC + struct.pack(">HII", 52318, 16, 0) + bytes(range(40, 56))
    with pytest.raises(RecordingError, match="header is damaged"):
        decode_header(garbage)
    with pytest.raises(RecordingError, match="truncated at byte 12, inside its header"):
        decode_header(layout.data[:12])
    with pytest.raises(RecordingError, match="cannot read"):
        RecordingReader(tmp_path / "missing.dlrec")


def _stretch(*bodies: bytes) -> bytes:
    """A START chunk holding these record bodies, compressed as the writer does."""
    stream = zlib.compressobj(6, zlib.DEFLATED, -15)
    raw = b"".join(struct.pack(">I", len(body)) + body for body in bodies)
    return encode_chunk(START, stream.compress(raw) + stream.flush(zlib.Z_SYNC_FLUSH))


def test_a_decompression_bomb_stops_at_the_limit(tmp_path, layout):
    stream = zlib.compressobj(9, zlib.DEFLATED, -15)
    bomb = stream.compress(bytes(64 << 20)) + stream.flush(zlib.Z_SYNC_FLUSH)  # 64 MiB of zeros
    assert len(bomb) < 100_000
    reader = read(tmp_path / "bomb.dlrec", layout.data + encode_chunk(START, bomb))
    assert reader.read_all() == session()  # everything before it
    assert "decompresses to more than 16 MiB" in reader.damage[-1].reason


def test_forged_records_in_a_good_chunk_cost_only_themselves(tmp_path, layout):
    def body(received: float, source: str, stored: object) -> bytes:
        return msgpack.packb([T0 + received, source, stored])

    whole = body(100, "b", to_wire(sample(100, 50.0)))
    change = body(101, "b", [1, 101])  # leaf 1 is the sequence number
    bodies = [whole, change, body(102, "b", [9999, 1.0]), body(103, "b", [1, 103]),
              body(104, "c", [1, 1.0]), b"\xc1"]  # fmt: skip
    reader = read(tmp_path / "forged.dlrec", layout.data + _stretch(*bodies))
    added = reader.read_all()[len(session()) :]
    assert [r.message for r in added] == [sample(100, 50.0), replace(sample(100, 50.0), seq=101)]
    reasons = [d.reason for d in reader.damage]
    assert len(reasons) == 4 and "change at leaf 9999" in reasons[0]
    # After a bad change its source has no base: what follows from it is refused too.
    assert all("without a whole sample first" in reason for reason in reasons[1:3])
    assert "does not decode" in reasons[3]
