"""Recordings: size per GPU sample, write and read rates, and opening and seeking in a day.

Size is measured on the real H200 fixture's frames (2 GPUs on a 32-core host): the whole
file, its samples alone, and the host's and each GPU's share of a sample, which give what an
8-GPU frame costs. Compression is compared on the same record stream: zlib (what the writer
uses) at three levels, and zstd where the `zstandard` package is installed. Rates are measured
on 8-GPU samples made of the fixture's readings, against msgpack alone in the same run. The
day is the fixture looped for 24 hours at 10 Hz with 8 GPUs (benchmarks/long_recording.py).

    python benchmarks/recording_speed.py [--hours 24] [--frames 20000] [--seeks 30]
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path

import msgpack

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.long_recording import H200, looped
from dltui.fleet.state import Fleet
from dltui.protocol.messages import Sample
from dltui.protocol.wire import to_wire
from dltui.recording.codec import StretchEncoder
from dltui.recording.format import Header, Record
from dltui.recording.reader import RecordingReader
from dltui.recording.replay import ReplaySet, load_tracks
from dltui.recording.writer import FLUSH_INTERVAL, STRETCH_S, RecordingWriter


def written(folder: Path, name: str, records: Iterable[Record]) -> tuple[Path, float]:
    """A recording of `records` made by the writer, and the seconds it took."""
    path = folder / f"{name}.dlrec"
    writer = RecordingWriter(path, Header("bench", time.time()))
    began = time.perf_counter()
    for record in records:
        writer.write(record.source, record.message, record.received)
    writer.close()
    return path, time.perf_counter() - began


def gpu_samples(records: list[Record]) -> int:
    return sum(len(r.message.gpus) for r in records if isinstance(r.message, Sample))


def chunks(records: list[Record], changes: bool = True) -> list[list[bytes]]:
    """The records as the writer's stretches hold them before compression, one byte string a
    chunk (cut by the records' times as the writer cuts them); without `changes`, with every
    sample whole, as a comparison."""
    stretches: list[list[bytes]] = []
    encoder = StretchEncoder()
    stretch_at = chunk_at = float("-inf")
    for record in records:
        if record.received - stretch_at >= STRETCH_S:
            encoder, stretch_at, chunk_at = StretchEncoder(), record.received, record.received
            stretches.append([b""])
        elif record.received - chunk_at >= FLUSH_INTERVAL:
            stretches[-1].append(b"")
            chunk_at = record.received
        if changes:
            stretches[-1][-1] += encoder.encode(record)
        else:
            body = msgpack.packb([record.received, record.source, to_wire(record.message)])
            stretches[-1][-1] += len(body).to_bytes(4, "big") + body
    return stretches


def compressed(stream: list[list[bytes]], make: Callable[[], Compress]) -> int:
    size = 0
    for stretch in stream:
        compress = make()
        size += sum(len(compress(chunk)) for chunk in stretch)
    return size


Compress = Callable[[bytes], bytes]


def compressors() -> dict[str, Callable[[], Compress]]:
    """Name → a maker of one stretch's `compress(chunk)`: one stream a stretch, flushed at the
    end of every chunk as the writer does."""

    def zlib_at(level: int) -> Callable[[], Compress]:
        def make() -> Compress:
            stream = zlib.compressobj(level, zlib.DEFLATED, -15)
            return lambda data: stream.compress(data) + stream.flush(zlib.Z_SYNC_FLUSH)

        return make

    found = {f"zlib {level}": zlib_at(level) for level in (1, 6, 9)}
    try:
        import zstandard
    except ImportError:
        return found

    def zstd_at(level: int) -> Callable[[], Compress]:
        def make() -> Compress:
            stream = zstandard.ZstdCompressor(level=level).compressobj()
            block = zstandard.COMPRESSOBJ_FLUSH_BLOCK
            return lambda data: stream.compress(data) + stream.flush(block)

        return make

    return found | {f"zstd {level}": zstd_at(level) for level in (1, 3, 9)}


def size_section(folder: Path) -> None:
    records = RecordingReader(H200).read_all()
    samples = [r for r in records if isinstance(r.message, Sample)]
    hosts = [dataclasses.replace(r, message=dataclasses.replace(r.message, gpus=[]))
             for r in samples]  # fmt: skip
    gpus = gpu_samples(records)
    v1 = H200.stat().st_size
    whole = written(folder, "whole", records)[0].stat().st_size
    alone = written(folder, "samples", samples)[0].stat().st_size
    host = written(folder, "hosts", hosts)[0].stat().st_size
    per_gpu = (alone - host) / gpus
    per_host = host / len(samples)
    print(f"Size, on the real H200 recording ({len(records)} frames, {len(samples)} samples of "
          f"2 GPUs, {gpus} GPU samples)")  # fmt: skip
    print(f"  version 1 (no compression)    {v1 / gpus:7.1f} B per GPU sample ({v1:,} B)")
    print(f"  version 2, the whole file     {whole / gpus:7.1f} B per GPU sample ({whole:,} B, "
          f"{whole / v1:.1%} of version 1)")  # fmt: skip
    print(f"  version 2, its samples alone  {alone / gpus:7.1f} B per GPU sample")
    print(f"    of which the host and clocks {per_host:6.1f} B a sample, each GPU {per_gpu:.1f} B")
    print(f"    so an 8-GPU sample frame    {(per_host + 8 * per_gpu) / 8:7.1f} B per GPU sample")
    stream = chunks(records)
    raw = sum(len(chunk) for stretch in stream for chunk in stretch)
    print(f"  compression of its record stream ({raw / gpus:.0f} B per GPU sample before), "
          "one stream a stretch, flushed every chunk:")  # fmt: skip
    makers = compressors()
    for name, make in makers.items():
        began = time.perf_counter()
        size = compressed(stream, make)
        rate = raw / (time.perf_counter() - began) / 1e6
        print(f"    {name:8s} {size / gpus:6.1f} B per GPU sample, {rate:5.0f} MB/s")
    if "zstd 3" not in makers:
        print("    (zstd: pip install zstandard to compare)")
    whole = chunks(records, changes=False)
    before = sum(len(chunk) for stretch in whole for chunk in stretch)
    print(
        f"  the same with every sample whole: {before / gpus:.0f} B per GPU sample before, "
        f"{compressed(whole, makers['zlib 6']) / gpus:.1f} after zlib 6"
    )


def rate_section(folder: Path, count: int) -> None:
    records = list(looped(count / 10 / 1.2, gpus=8, every_s=1e9))  # samples plus 1 Hz frames
    size = sum(len(msgpack.packb(to_wire(r.message))) for r in records)
    began = time.perf_counter()
    for record in records:
        msgpack.packb([record.received, record.source, to_wire(record.message)])
    baseline = len(records) / (time.perf_counter() - began)
    writer = RecordingWriter(folder / "rate.dlrec", Header("bench", time.time()))
    began = time.perf_counter()
    for record in records:
        writer.write(record.source, record.message, record.received)
    queued = time.perf_counter() - began
    writer.close()
    took = time.perf_counter() - began
    on_disk = writer.path.stat().st_size
    began = time.perf_counter()
    read = sum(1 for _ in RecordingReader(writer.path))
    reading = time.perf_counter() - began
    frames = len(records)
    print(f"Rates, {frames:,} frames of 8-GPU samples (and their 1 Hz link and pong frames)")
    print(f"  msgpack alone (baseline)      {baseline:9,.0f} frames/s")
    print(f"  write() on the caller         {frames / queued:9,.0f} frames/s (never blocks)")
    print(f"  written to disk               {frames / took:9,.0f} frames/s, "
          f"{size / took / 1e6:.1f} MB/s of frames ({on_disk / took / 1e6:.2f} MB/s on disk); "
          f"{frames / took / 640:.0f}× what 64 servers at 10 Hz send")  # fmt: skip
    print(f"  read back and validated       {read / reading:9,.0f} frames/s")


def day_section(folder: Path, hours: float, seeks: int) -> None:
    seconds = hours * 3600
    path, took = written(folder, "day", looped(seconds, gpus=8, every_s=3600))
    samples = int(seconds * 10)
    size = path.stat().st_size
    print(f"A {hours:g}-hour recording, 8 GPUs at 10 Hz ({samples:,} samples), looped from the "
          "fixture")  # fmt: skip
    print(f"  written in {took:.0f} s; {size / 1e6:.0f} MB ({size / samples / 8:.1f} B per GPU "
          "sample: looping repeats the fixture's values, judge size above)")  # fmt: skip
    began = time.perf_counter()
    replay = ReplaySet(load_tracks([path]), Fleet())
    opened = time.perf_counter() - began
    (track,) = replay.tracks
    print(f"  opened in {opened * 1000:.0f} ms: {len(track.timeline.stretches):,} stretches, "
          f"{len(track.timeline.case_starts)} benchmark cases indexed")  # fmt: skip
    rng = random.Random(5)
    walls, cpus = [], []
    for _ in range(seeks):
        target = rng.uniform(0, replay.length)
        began, cpu = time.perf_counter(), time.process_time()
        replay.seek(target)
        walls.append(time.perf_counter() - began)
        cpus.append(time.process_time() - cpu)
    (server,) = replay.fleet.servers.values()
    assert server.samples > 0 and server.inventory is not None
    print(f"  seek to a random point ({seeks} seeks, back and forth): median "
          f"{statistics.median(walls) * 1000:.0f} ms, max {max(walls) * 1000:.0f} ms; CPU time "
          f"median {statistics.median(cpus) * 1000:.0f} ms, max {max(cpus) * 1000:.0f} ms "
          "(wall above CPU is other programs on this machine)")  # fmt: skip
    replay.seek(0)
    began = time.perf_counter()
    jumps = sum(replay.next_phase() for _ in range(5))
    took = (time.perf_counter() - began) / max(jumps, 1)
    print(f"  next benchmark case (n): {took * 1000:.1f} ms a jump")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hours", type=float, default=24.0, help="of the long recording")
    parser.add_argument("--frames", type=int, default=20_000, help="for the write and read rates")
    parser.add_argument("--seeks", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        size_section(Path(folder))
        rate_section(Path(folder), args.frames)
        day_section(Path(folder), args.hours, args.seeks)


if __name__ == "__main__":
    main()
