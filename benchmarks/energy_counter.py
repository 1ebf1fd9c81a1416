"""How finely does the GPU's energy counter resolve a window of timed work?

Under a steady bf16 GEMM burn, reads the counter (through dltui's NVML gateway) as fast as it
answers, then asks: over windows of 0.05–2 s taken anywhere in the burn, how far does the
power a window's two reads give stray from the whole burn's? That spread sets
plans.formulas.MIN_ENERGY_WINDOW_S: below it a per-watt figure is "too short".

    python benchmarks/energy_counter.py [--seconds 4] [--out FILE]
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dltui.telemetry.nvml import NvmlGateway  # noqa: E402

WINDOWS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    import torch

    gateway = NvmlGateway()
    gateway.open()
    index = gateway.index_of(str(torch.cuda.get_device_properties(0).uuid))
    assert index is not None, gateway.error
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    stop = threading.Event()

    def burn() -> None:
        while not stop.is_set():
            for _ in range(20):
                a @ a
            torch.cuda.synchronize()

    burner = threading.Thread(target=burn)
    burner.start()
    time.sleep(1.0)  # ok: clocks and power settle under the burn before reading
    reads: list[tuple[float, float]] = []
    started = time.perf_counter()
    while time.perf_counter() - started < args.seconds:
        before = time.perf_counter()
        joules = gateway.energy_joules(index)
        after = time.perf_counter()
        if joules is not None:
            reads.append(((before + after) / 2, joules))
    stop.set()
    burner.join()
    costs = [b - a for (a, _), (b, _) in itertools.pairwise(reads)]
    changes = [t for (_, e0), (t, e) in itertools.pairwise(reads) if e != e0]
    steps = [b - a for a, b in itertools.pairwise(changes)]
    mean_watts = (reads[-1][1] - reads[0][1]) / (reads[-1][0] - reads[0][0])
    times = [t for t, _ in reads]
    report = {
        "reads": len(reads),
        "read_cost_ms": statistics.median(costs) * 1e3,
        "update_interval_ms": statistics.median(steps) * 1e3 if steps else None,
        "mean_watts": mean_watts,
        "windows": {},
    }
    print(f"{len(reads)} reads, {report['read_cost_ms']:.2f} ms each; the counter moved every "
          f"{report['update_interval_ms']:.1f} ms (median); burn {mean_watts:.0f} W")  # fmt: skip
    for window in WINDOWS:
        errors = []
        for i, (t0, e0) in enumerate(reads):
            j = bisect.bisect_left(times, t0 + window, lo=i)
            if j >= len(reads):
                break
            t1, e1 = reads[j]
            errors.append(abs((e1 - e0) / (t1 - t0) - mean_watts) / mean_watts)
        if errors:
            errors.sort()
            p95 = errors[int(0.95 * (len(errors) - 1))]
            report["windows"][str(window)] = {"median": statistics.median(errors), "p95": p95}
            print(f"  window {window:5.2f} s: power off by {statistics.median(errors):.2%} "
                  f"(median), {p95:.2%} (p95)")  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    gateway.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
