"""Time from typing `dltui` to the first drawn frame showing this machine, in a real pty.

The baseline, measured in the same run, is a bare `python -c pass`: the interpreter's own
start-up, which no change to dltui can remove.

    python benchmarks/startup.py [--runs 5]

Target (issue #2): < 1 s to the first frame, with no TensorFlow or PyTorch import on the path.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import socket
import statistics
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def time_to_text(command: list[str], needle: bytes, timeout: float = 20.0) -> float:
    """Seconds from spawning `command` in a 120×40 pty until `needle` appears in its output."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = os.environ | {"TERM": "xterm-256color", "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    process = subprocess.Popen(
        command, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=ROOT, close_fds=True
    )
    os.close(slave)
    seen = b""
    try:
        while needle not in seen:
            if time.perf_counter() - started > timeout:
                raise SystemExit(f"{needle!r} did not appear within {timeout} s")
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    seen = (seen + os.read(master, 65536))[-65536:]
                except OSError:  # the child closed the pty
                    break
        elapsed = time.perf_counter() - started
        os.write(master, b"q")
        process.wait(timeout=10)
        return elapsed
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    hostname = socket.gethostname().encode()
    baseline = [
        time_to_text([sys.executable, "-c", "print('ready')"], b"ready") for _ in range(args.runs)
    ]
    first_frame = [
        time_to_text([sys.executable, "-m", "dltui"], hostname) for _ in range(args.runs)
    ]
    base, frame = statistics.median(baseline), statistics.median(first_frame)
    print(f"python -c pass (baseline)   median {base * 1000:7.0f} ms")
    print(
        f"dltui to first frame        median {frame * 1000:7.0f} ms  "
        f"(min {min(first_frame) * 1000:.0f}, max {max(first_frame) * 1000:.0f})"
    )
    print(f"ratio to baseline           {frame / base:.1f}x")


if __name__ == "__main__":
    main()
