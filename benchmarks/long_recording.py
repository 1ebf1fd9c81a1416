"""A long session made from a real recording: its frames looped, with their times shifted.

For the seek and export benchmarks (a 24-hour, 8-GPU, 10 Hz recording) and their tests:

    python benchmarks/long_recording.py --hours 24 [--gpus 8] -o day.dlrec

The samples are
the H200 fixture's, in order, at 10 Hz, their two GPUs' readings spread over `gpus` GPUs (GPU
k reads as the fixture's GPU k mod 2 did a few seconds apart, so no two are alike); every
second a link update and a pong, as a live connection has; every `every_s` the fixture's
benchmark job again, under a new id, and half-way between, a five-second outage.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dltui.protocol.messages import (
    ConnectionState,
    JobEnd,
    JobProgress,
    JobResult,
    Pong,
    Sample,
    Welcome,
)
from dltui.recording.format import Header, Record
from dltui.recording.reader import RecordingReader
from dltui.recording.writer import RecordingWriter

H200 = Path(__file__).resolve().parents[1] / "tests/fixtures/h200x2-kernels.dlrec"
SOURCE = "gpu-01:7070"
OUTAGE_S = 5.0


def _spread(samples: list[Sample], gpus: int) -> list[Sample]:
    """The fixture's samples with `gpus` GPUs each."""
    spread = []
    for index, sample in enumerate(samples):
        readings = []
        for gpu in range(gpus):
            donor = samples[(index + 37 * (gpu // 2)) % len(samples)]
            readings.append(dataclasses.replace(donor.gpus[gpu % len(donor.gpus)], index=gpu))
        spread.append(dataclasses.replace(sample, gpus=readings))
    return spread


def looped(seconds: float, gpus: int = 8, every_s: float = 3600.0) -> Iterator[Record]:
    """`seconds` of session at 10 Hz, in the order a recorder receives it."""
    records = RecordingReader(H200).read_all()
    welcome = next(r.message for r in records if isinstance(r.message, Welcome))
    inventory = welcome.inventory
    gpu_info = [dataclasses.replace(inventory.gpus[i % len(inventory.gpus)], index=i)
                for i in range(gpus)]  # fmt: skip
    welcome = dataclasses.replace(welcome, inventory=dataclasses.replace(inventory, gpus=gpu_info))
    samples = _spread([r.message for r in records if isinstance(r.message, Sample)], gpus)
    jobs = [r for r in records if isinstance(r.message, JobProgress | JobResult | JobEnd)]
    job_start = jobs[0].received
    start = records[0].received
    offset = next(r.message.offset for r in records if isinstance(r.message, ConnectionState)
                  and r.message.offset is not None)  # fmt: skip
    pending: list[Record] = []
    yield Record(start, SOURCE, ConnectionState("live", start, rtt=0.0008, offset=offset))
    yield Record(start, SOURCE, welcome)
    outage_until = -1.0
    for tick in range(int(seconds * 10)):
        t = start + tick / 10
        elapsed = tick / 10
        if tick % int(every_s * 10) == 0:
            round_ = tick // int(every_s * 10)
            pending += [_job_frame(r, f"-{round_}", t + r.received - job_start) for r in jobs]
        while pending and pending[0].received <= t:
            yield pending.pop(0)
        if tick % int(every_s * 10) == int(every_s * 5):
            outage_until = elapsed + OUTAGE_S
            yield Record(t, SOURCE, ConnectionState("offline", t, "connection lost: reset by peer"))
            yield Record(t, SOURCE, ConnectionState("connecting", t))
        if elapsed < outage_until:
            continue
        if outage_until > 0:
            outage_until = -1.0
            yield Record(t, SOURCE, ConnectionState("live", t, rtt=0.0008, offset=offset))
            yield Record(t, SOURCE, welcome)
        base = samples[tick % len(samples)]
        yield Record(t, SOURCE, dataclasses.replace(base, seq=tick + 1, wall=t - 0.0004,
                                                    mono=1000.0 + elapsed))  # fmt: skip
        if tick % 10 == 5:
            rtt = 0.0007 + (tick % 7) * 1e-5
            yield Record(
                t, SOURCE, ConnectionState("live", t, rtt=rtt, offset=offset + (tick % 3) * 1e-6)
            )
            yield Record(t, SOURCE, Pong(tick, t, 1000.0 + elapsed, dropped=tick // 36000))


def _job_frame(record: Record, suffix: str, received: float) -> Record:
    message = dataclasses.replace(record.message, job=record.message.job + suffix)
    if isinstance(message, JobEnd):
        message = dataclasses.replace(message, wall=received)
    return Record(received, SOURCE, message)


BACKLOG = 50_000
"""Records handed to the writer and not yet on disk, at most: looping is faster than writing,
and a day's records held in its queue would take gigabytes."""


def write(path: Path, seconds: float, gpus: int = 8, every_s: float = 3600.0) -> Path:
    """`path`, a new recording of `seconds` of `looped` session."""
    writer = RecordingWriter(path, Header("long_recording", time.time(), {SOURCE: SOURCE}))
    for count, record in enumerate(looped(seconds, gpus, every_s), 1):
        writer.write(record.source, record.message, record.received)
        while count - writer.records > BACKLOG and writer.failure is None:
            time.sleep(0.01)  # ok: waiting for the writer's thread to catch up
    writer.close()
    if writer.failure is not None:
        raise SystemExit(writer.failure)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()
    began = time.perf_counter()
    write(args.output, args.hours * 3600, args.gpus)
    size = args.output.stat().st_size
    print(f"{args.output}: {args.hours:g} h, {args.gpus} GPUs, {size / 1e6:.1f} MB, written in "
          f"{time.perf_counter() - began:.0f} s")  # fmt: skip


if __name__ == "__main__":
    main()
