"""Does the TUI keep up with many servers? 64 servers × 8 GPUs at 10 Hz, fed from recordings.

The real fixture (tests/fixtures/h200x2-kernels.dlrec) is repeated under 64 server names, its
two GPUs made eight, its samples re-stamped to the asked rate, its benchmark frames kept in
place (so phases are tracked too). Each frame is encoded once; the app decodes and validates
every frame of every server as it would from a socket, in its own process, in a real
pseudo-terminal of the asked size. Meanwhile arrow keys are sent as a user would type them.

Figures: the TUI process's CPU (in cores) over the measured window, key-press to redraw
latency (from the key event's creation to the end of the next screen update after it), and
its resident memory at the end. The baseline, in the same run, is one server fed the same way.
`--window` picks the charts' time window (60, 600 or 3600 s): an hour's chart reads every
bucket of the series' hour of history, so it is the dearest to draw.

    python benchmarks/ui_scale.py [--servers 64] [--gpus 8] [--rate 10] [--seconds 30]
                                  [--window 60] [--size 200x60]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import fcntl
import json
import os
import pty
import select
import statistics
import struct
import sys
import tempfile
import termios
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psutil

from dltui.protocol.framing import FrameDecoder, encode_frame
from dltui.protocol.messages import ConnectionState, Message, Sample, Welcome
from dltui.protocol.wire import from_wire, to_wire
from dltui.recording.reader import RecordingReader

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "h200x2-kernels.dlrec"
WARMUP_S = 8.0
KEY_EVERY_S = 0.5
KEYS = (b"\x1b[C", b"\x1b[D")  # right, left: the strip moves one server each time


def widen(message: Message, gpus: int) -> Message:
    """The recorded server with `gpus` GPUs: its GPUs repeated, renumbered."""
    if isinstance(message, Welcome):
        recorded = message.inventory.gpus
        more = [dataclasses.replace(recorded[i % len(recorded)], index=i) for i in range(gpus)]
        inventory = dataclasses.replace(message.inventory, gpus=more)
        return dataclasses.replace(message, inventory=inventory)
    if isinstance(message, Sample) and message.gpus:
        more = [dataclasses.replace(message.gpus[i % len(message.gpus)], index=i)
                for i in range(gpus)]  # fmt: skip
        return dataclasses.replace(message, gpus=more)
    return message


def timeline(gpus: int, rate: float, ticks: int) -> tuple[list[bytes], list[list[bytes]]]:
    """The welcome and link frames, then per tick the encoded frames of one server."""
    records = RecordingReader(FIXTURE).read_all()
    start = [encode_frame(to_wire(widen(r.message, gpus))) for r in records
             if isinstance(r.message, Welcome)]  # fmt: skip
    start.append(
        encode_frame(to_wire(ConnectionState("live", time.time(), rtt=0.0005, offset=0.0)))
    )
    body = [r.message for r in records if not isinstance(r.message, (Welcome, ConnectionState))]
    per_tick: list[list[bytes]] = []
    began = time.time() + WARMUP_S / 2
    seq = 0
    while len(per_tick) < ticks:
        for message in body:
            if isinstance(message, Sample):
                seq += 1
                wall = began + seq / rate
                message = dataclasses.replace(message, seq=seq, wall=wall, mono=wall)
                per_tick.append([])
            if per_tick and len(per_tick) <= ticks:
                per_tick[-1].append(encode_frame(to_wire(widen(message, gpus))))
    return start, per_tick[:ticks]


# --- the TUI process ----------------------------------------------------------------------


def child(args: argparse.Namespace) -> None:
    from textual import events

    from dltui.client.session import ClientSession
    from dltui.fleet.state import Fleet
    from dltui.tui.app import DltuiApp
    from dltui.tui.view import MonitorView

    ticks = round((args.seconds + WARMUP_S * 2) * args.rate)
    start, per_tick = timeline(args.gpus, args.rate, ticks)
    sources = [f"gpu-{n:02d}:7070" for n in range(1, args.servers + 1)]
    latencies: list[float] = []
    seen: set[int] = set()

    class Measured(DltuiApp):
        async def on_mount(self) -> None:
            await super().on_mount()
            self.feeder = asyncio.create_task(self.feed())

        async def feed(self) -> None:
            decoder = FrameDecoder()
            for source in sources:
                for frame in start:
                    for obj in decoder.feed(frame):
                        self.session.deliver(source, from_wire(obj))
            began = time.monotonic()
            for index, frames in enumerate(per_tick):
                for source in sources:
                    for frame in frames:
                        for obj in decoder.feed(frame):
                            self.session.deliver(source, from_wire(obj))
                    await asyncio.sleep(0)  # as connections do: each its own read loop
                await asyncio.sleep(max(0.0, began + (index + 1) / args.rate - time.monotonic()))

        async def on_event(self, event: events.Event) -> None:
            # Every key reaches the app first, before any binding acts on it (and again, as
            # it bubbles back up: count it once).
            if isinstance(event, events.Key) and id(event) not in seen:
                seen.add(id(event))
                pressed = event.time
                self.call_after_refresh(lambda: latencies.append(time.monotonic() - pressed))
            await super().on_event(event)

    fleet = Fleet()
    for source in sources:
        fleet.add(source)
    app = Measured(fleet, ClientSession([]), MonitorView(window=args.window))
    app.run()
    Path(args.out).write_text(json.dumps(latencies))


# --- the measuring side -------------------------------------------------------------------


def measure(args: argparse.Namespace, servers: int) -> dict[str, float]:
    out = tempfile.mktemp(suffix=".json")
    command = [sys.executable, __file__, "--child", "--servers", str(servers), "--gpus",
               str(args.gpus), "--rate", str(args.rate), "--seconds", str(args.seconds),
               "--window", str(args.window), "--out", out]  # fmt: skip
    columns, rows = (int(n) for n in args.size.split("x"))
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm-256color"
        os.execv(sys.executable, command)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    process = psutil.Process(pid)

    def drain(seconds: float, keys: bool) -> None:
        deadline = time.monotonic() + seconds
        next_key = time.monotonic() + KEY_EVERY_S
        pressed = 0
        while (now := time.monotonic()) < deadline:
            ready, _, _ = select.select([fd], [], [], min(0.05, deadline - now))
            if ready:
                try:
                    os.read(fd, 1 << 16)
                except OSError:
                    return
            if keys and now >= next_key:
                os.write(fd, KEYS[pressed % 2])
                pressed += 1
                next_key += KEY_EVERY_S

    drain(WARMUP_S, keys=False)
    cpu_before, wall_before = process.cpu_times(), time.monotonic()
    drain(args.seconds, keys=True)
    cpu_after, wall = process.cpu_times(), time.monotonic() - wall_before
    used = (cpu_after.user + cpu_after.system) - (cpu_before.user + cpu_before.system)
    rss = process.memory_info().rss
    os.write(fd, b"q")
    drain(5.0, keys=False)
    os.waitpid(pid, 0)
    latencies = json.loads(Path(out).read_text())
    os.unlink(out)
    latencies = sorted(latencies)
    return {
        "servers": servers,
        "cores": used / wall,
        "keys": len(latencies),
        "latency_median_ms": statistics.median(latencies) * 1e3,
        "latency_p95_ms": latencies[int(0.95 * (len(latencies) - 1))] * 1e3,
        "latency_max_ms": latencies[-1] * 1e3,
        "rss_mib": rss / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=64)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--rate", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--size", default="200x60", help="terminal COLUMNSxROWS")
    parser.add_argument("--window", type=float, default=60.0, choices=(60.0, 600.0, 3600.0),
                        help="the charts' time window in seconds (default 60)")  # fmt: skip
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    print(f"# {args.gpus} GPUs a server at {args.rate:g} Hz, terminal {args.size}, "
          f"charts of {args.window:g} s, {args.seconds:g} s measured after {WARMUP_S:g} s, "
          f"a key every {KEY_EVERY_S:g} s")  # fmt: skip
    print(f"{'servers':>7} {'cores':>6} {'keys':>5} {'median':>8} {'p95':>8} {'max':>8} "
          f"{'RSS':>8}")  # fmt: skip
    for servers in (1, args.servers):
        row = measure(args, servers)
        print(f"{row['servers']:>7} {row['cores']:>6.2f} {row['keys']:>5} "
              f"{row['latency_median_ms']:>6.1f}ms {row['latency_p95_ms']:>6.1f}ms "
              f"{row['latency_max_ms']:>6.1f}ms {row['rss_mib']:>5.0f}MiB", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
