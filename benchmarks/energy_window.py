"""Does `--energy`'s per-watt figure read the sustained load, not a phase of it?

For each GEMM, `--repeats` times, each from 3 s of idle: the case through the backend as
`dltui bench kernels --energy --fill random` times it (its TFLOP/s/W, the span its meter read,
how long the case took), then a reference from the same idle start: the step looped for
REFERENCE_S with a sync every ~20 ms, TFLOP/s/W as work over joules from its 2nd second to its
end (many whole swings of a power limit), the step replayed from a CUDA graph as the engine
runs it, and, from the same run, the first 0.6 s from idle:
what a fixed window read before (docs/results/energy-window-h100.txt).

    PYTHONPATH=. python benchmarks/energy_window.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dltui.bench.backends import Settings, budget_for, load_backend
from dltui.bench.backends.torch_backend import cuda_graph, gemm_step
from dltui.bench.energy import open_meter
from dltui.bench.shapes import GemmCase
from dltui.plans import formulas
from dltui.protocol.bench_plans import KernelPlan

CASES = (GemmCase(4096, 4096, 4096), GemmCase(1024, 1024, 1024))
IDLE_S = 3.0
REFERENCE_S = 10.0
SETTLED_S = 2.0
FIXED_S = 0.6


def per_watt_between(marks, updates, begin: float, end: float, flops: float) -> float:
    """TFLOP/s/W from the counter's updates nearest inside [begin, end] and the iterations
    done between them (interpolated between syncs)."""
    inside = [u for u in updates if begin <= u[0] <= end]
    (t0, e0), (t1, e1) = inside[0], inside[-1]
    iterations = formulas.at(marks, t1) - formulas.at(marks, t0)
    return iterations * flops / 1e12 / (e1 - e0)


def replayed(torch, step) -> tuple[object, int]:
    """The step as the engine runs it: a CUDA graph of ~2 ms of it, and how many it holds (a
    small GEMM looped from the host would be bound by its launches, a lighter load)."""
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    began = time.perf_counter()
    for _ in range(50):
        step()
    torch.cuda.synchronize()
    count = max(1, math.ceil(2e-3 / ((time.perf_counter() - began) / 50)))
    return cuda_graph(torch)(step, count), count


def reference(torch, replay, count: int, meter, flops: float) -> tuple[float, float]:
    """(settled, first 0.6 s) TFLOP/s/W of the replays looped from idle for REFERENCE_S."""
    meter.start()
    started = time.perf_counter()
    marks = [(started, 0)]
    while time.perf_counter() - started < REFERENCE_S:
        for _ in range(10):
            replay()
        torch.cuda.synchronize()
        marks.append((time.perf_counter(), marks[-1][1] + 10 * count))
    meter.stop()
    updates = meter.updates()
    end = marks[-1][0]
    settled = per_watt_between(marks, updates, started + SETTLED_S, end, flops)
    first = per_watt_between(marks, updates, started, started + FIXED_S + 0.1, flops)
    return settled, first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    backend = load_backend("torch", "cuda")
    import torch

    meter = open_meter(backend.gpu_uuids[0])
    assert meter is not None, "NVML cannot read this GPU's energy counter"
    plan = KernelPlan(device="cuda", energy=True, fill="random")
    settings = Settings("bf16", "searched", "random", budget_for(plan, "gemm", on_gpu=True))
    print(f"{torch.cuda.get_device_name(0)}, power limit {meter.limit_w} W")
    print("case | --energy TFLOP/s/W | span s | case s | reference (2 s on) | first 0.6 s | ratio")
    for case in CASES:
        flops = case.flops
        replay, count = replayed(torch, gemm_step(torch, case, torch.bfloat16, "cuda", "normal"))
        for _ in range(args.repeats):
            time.sleep(IDLE_S)
            began = time.perf_counter()
            energy = backend.time_case(case, "fwd", settings).timing.energy
            took = time.perf_counter() - began
            assert energy is not None
            measured = (
                flops / energy.seconds_per_iteration / 1e12 / (energy.joules / energy.seconds)
            )
            time.sleep(IDLE_S)
            settled, first = reference(torch, replay, count, meter, flops)
            print(f"{case.label} | {measured:.3f} | {energy.seconds:.2f} | {took:.2f} | "
                  f"{settled:.3f} | {first:.3f} | {measured / settled:.3f}",
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
