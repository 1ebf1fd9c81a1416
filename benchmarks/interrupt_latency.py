"""How long `dltui probe` takes to end after Ctrl-C while it connects: SIGINT the moment a
silent server (one that accepts and never says hello) has accepted it, and time each exit.

A cancel lost as the connection opened once made such a probe wait out its 5 s stop limit.

    python benchmarks/interrupt_latency.py [--runs 40]
"""

from __future__ import annotations

import argparse
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SLOW_S = 2.0
"""An exit later than this waited on a timeout, not on the work of stopping."""


def one_interrupt() -> tuple[float, int]:
    """Seconds from the SIGINT to the probe's exit, and its exit status."""
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        command = [sys.executable, "-m", "dltui", "probe", f"127.0.0.1:{port}"]
        probe = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.DEVNULL)
        connection, _ = silent.accept()
        with connection:
            sent = time.monotonic()
            probe.send_signal(signal.SIGINT)
            probe.wait(timeout=60)
            return time.monotonic() - sent, probe.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    runs = [one_interrupt() for _ in range(args.runs)]
    seconds = sorted(s for s, _ in runs)
    slow = sum(s > SLOW_S for s in seconds)
    statuses = sorted({status for _, status in runs})
    print(f"{args.runs} probes interrupted while connecting: exit status {statuses}")
    print(f"seconds to exit: median {statistics.median(seconds):.2f}, max {seconds[-1]:.2f}; "
          f"over {SLOW_S:g} s: {slow} of {args.runs}")  # fmt: skip


if __name__ == "__main__":
    main()
