"""`dltui export` on long recordings: time, CPU time and peak RSS per format.

Each export is a real `dltui export` process; its peak RSS and CPU time come from the kernel as
the process is waited for (wait4). The recordings are made by benchmarks/long_recording.py (the
H200 fixture looped with 8 GPUs at 10 Hz); an output is deleted once measured, so a day's CSV
(about 11 GB) need not stay on disk. `--null` sends OpenMetrics to /dev/null (a day of it is
about 35 GB of text; its spill file still takes 16 bytes a point in $TMPDIR).

    python benchmarks/long_recording.py --hours 1 -o 1h.dlrec
    python benchmarks/export_speed.py 1h.dlrec [24h.dlrec] [--formats csv,parquet,openmetrics]
        [--null] [--json OUT]

Targets (issue #18): peak RSS ≤ 300 MB for the 24-hour file; ≥ 1 million telemetry rows/s to
CSV.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def measure(recording: Path, fmt: str, out: Path) -> dict[str, Any]:
    command = [sys.executable, "-m", "dltui", "export", str(recording), "--format", fmt, "-o",
               str(out)]  # fmt: skip
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    began = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - began
    assert process.stdout is not None and process.stderr is not None
    printed = process.stdout.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{fmt}: {process.stderr.read().decode()}")
    rows = int(printed.split(": ")[1].split()[0])
    size = sum(p.stat().st_size for p in out.rglob("*")) if out.is_dir() else (
        out.stat().st_size if out.is_file() else 0)  # fmt: skip
    cpu = usage.ru_utime + usage.ru_stime
    return {
        "recording": recording.name,
        "recording_mb": round(recording.stat().st_size / 1e6, 1),
        "format": fmt,
        "rows": rows,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "rows_per_s_wall": round(rows / wall),
        "rows_per_cpu_s": round(rows / cpu),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "output_mb": round(size / 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recordings", nargs="+", type=Path)
    parser.add_argument("--formats", default="csv,parquet,openmetrics")
    parser.add_argument("--null", action="store_true", help="OpenMetrics to /dev/null")
    parser.add_argument("--json", metavar="OUT")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="dltui-export-") as scratch:
        for recording in args.recordings:
            for fmt in args.formats.split(","):
                out = Path(scratch) / f"{recording.stem}.{fmt}"
                if fmt == "openmetrics" and args.null:
                    out = Path(os.devnull)
                result = measure(recording, fmt, out)
                results.append(result)
                print("  ".join(f"{key}={value}" for key, value in result.items()), flush=True)
                if out.is_dir():
                    shutil.rmtree(out)
                elif out.is_file():
                    out.unlink()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
