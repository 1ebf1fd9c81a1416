"""How fast recordings are written and read, how big they are, and what compression would save.

Synthetic but realistic frames: 8-GPU samples as an H200 agent sends them. The baseline, in the
same run, is msgpack packing the same maps alone.

    python benchmarks/recording_speed.py [--servers 64] [--seconds 10]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import zlib
from pathlib import Path

import msgpack

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.protocol_speed import make_sample
from dltui.protocol.messages import to_wire
from dltui.recording.format import Header
from dltui.recording.reader import RecordingReader
from dltui.recording.writer import RecordingWriter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", type=int, default=64)
    parser.add_argument("--seconds", type=int, default=10, help="of recorded session at 10 Hz")
    args = parser.parse_args()
    sample = make_sample(8)
    frames = args.servers * args.seconds * 10
    sources = [f"gpu-{i:02d}:7070" for i in range(args.servers)]

    began = time.perf_counter()
    for _ in range(frames):
        msgpack.packb(to_wire(sample))
    baseline = frames / (time.perf_counter() - began)

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.dlrec"
        writer = RecordingWriter(path, Header("bench", time.time()))
        began = time.perf_counter()
        for index in range(frames):
            writer.write(sources[index % args.servers], sample, 1.7e9 + index / 640)
        queued = time.perf_counter() - began
        writer.close()
        written = time.perf_counter() - began
        size = path.stat().st_size
        began = time.perf_counter()
        count = sum(1 for _ in RecordingReader(path))
        read = time.perf_counter() - began
        data = path.read_bytes()
    # Synthetic samples repeat one value and compress unrealistically well: judge compression
    # on the real H200 recording when it is there.
    real = Path(__file__).resolve().parents[1] / "tests/fixtures/h200x2-kernels.dlrec"
    if real.exists():
        data = real.read_bytes()
    began = time.perf_counter()
    compressed = len(zlib.compress(data, 1))
    zlib_rate = len(data) / (time.perf_counter() - began)

    live_rate = args.servers * 10
    print(f"{frames} frames of an 8-GPU sample ({args.servers} servers × {args.seconds} s × 10 Hz)")
    print(f"  msgpack alone (baseline)    {baseline:10,.0f} frames/s")
    print(f"  write() on the caller       {frames / queued:10,.0f} frames/s (never blocks)")
    print(
        f"  written to disk             {frames / written:10,.0f} frames/s "
        f"({frames / written / live_rate:.0f}× a live {args.servers}-server session)"
    )
    print(f"  read back and validated     {count / read:10,.0f} frames/s")
    print(
        f"  size                        {size / frames:10,.0f} bytes/frame, "
        f"{size / args.seconds / 1e6:.2f} MB per second of session"
    )
    what = "the real H200 recording" if real.exists() else "these frames"
    print(
        f"  zlib level 1 on {what}: {compressed / len(data):.1%} of its size, "
        f"at {zlib_rate / 1e6:,.0f} MB/s"
    )


if __name__ == "__main__":
    main()
