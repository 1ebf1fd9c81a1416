"""Why some GEMMs trail DeepBench's figures on the H200, and RNNs trail a bare loop.

Three questions, on the GPU this runs on (the figures: docs/results/kernels-h200-power.txt):
- GEMM: 400 iterations back to back after an idle pause ("burst", DeepBench's run) against
  the same after 0.5 s of full load, with PyTorch's two BLAS paths and with reduced-precision
  reductions on and off, normal inputs or DeepBench's zeros; the SM clock and power after each;
- RNN: events around each iteration against a bare loop against one CUDA graph replay
  (cuDNN launches per time step from the host);
- how a GEMM's time moves over successive 50-iteration loops (the boost window).

    PYTHONPATH=. python benchmarks/kernel_power.py
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.kernel_parity import loop_us
from dltui.bench.backends.torch_backend import (
    cuda_graph,
    gemm_step,
    rnn_step,
    set_precision,
)
from dltui.bench.padding import padded
from dltui.bench.shapes import GemmCase, RnnCase
from dltui.telemetry.nvml import NvmlGateway

GEMMS = (
    GemmCase(512, 24000, 2816),
    GemmCase(512, 24000, 2816, a_t=True),
    GemmCase(7680, 5481, 2560, b_t=True),
    GemmCase(4096, 7133, 4096, b_t=True),
    GemmCase(2560, 7000, 2560),
    GemmCase(1760, 128, 1760),
    GemmCase(5124, 9124, 2560),
)
RNNS = (
    (RnnCase("vanilla", 2048, 128, 50), "fwd"),
    (RnnCase("vanilla", 2048, 32, 50), "fwd"),
    (RnnCase("gru", 1536, 32, 375), "fwd"),
    (RnnCase("lstm", 1536, 8, 50), "fwd+bwd"),
    (RnnCase("vanilla", 2048, 64, 50), "fwd+bwd"),
)


def load(torch: Any, step: Callable[[], object], seconds: float) -> None:
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        for _ in range(20):
            step()
        torch.cuda.synchronize()


def main() -> int:
    import torch

    gateway = NvmlGateway()
    gateway.open()

    def clock_and_power() -> str:
        values = gateway.read_fast()[0].values
        return f"{values.get('clock_sm', 0):.0f} MHz {values.get('power', 0):.0f} W"

    print("GEMM µs: shape | fill | reduced | BLAS | burst of 400 | 400 after 0.5 s load | after")
    for stated in GEMMS:
        case = padded(stated, "mixed")
        for fill in ("normal", "zeros"):
            for reduced in (False, True):
                for library in ("cublas", "cublaslt"):
                    torch.backends.cuda.preferred_blas_library(library)
                    set_precision(torch, "mixed")
                    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = reduced
                    step = gemm_step(torch, case, torch.float16, "cuda", fill)
                    step()
                    torch.cuda.synchronize()
                    time.sleep(0.3)  # ok: idle, so the burst starts from a rested GPU
                    burst = loop_us(torch, step, 400)
                    load(torch, step, 0.5)
                    hot = loop_us(torch, step, 400)
                    print(f"{stated.label:<20} {fill:<6} {reduced!s:<5} {library:<8} "
                          f"{burst:8.1f} {hot:8.1f}  {clock_and_power()}")  # fmt: skip
    torch.backends.cuda.preferred_blas_library("cublas")
    print("RNN µs: case | events around each | bare loop | CUDA graph replay")
    for case, direction in RNNS:
        set_precision(torch, "mixed")
        step = rnn_step(torch, case, direction, torch.float16, "cuda")
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        bare = loop_us(torch, step, 30)
        events = []
        for _ in range(20):
            begin = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            begin.record()
            step()
            end.record()
            events.append((begin, end))
        torch.cuda.synchronize()
        each = statistics.median(begin.elapsed_time(end) * 1e3 for begin, end in events)
        replay = cuda_graph(torch)(step, 1)
        graph = None
        if replay is not None:
            replay()
            torch.cuda.synchronize()
            graph = loop_us(torch, replay, 30)
        print(f"{case.label} {direction}: each {each:9.1f} bare {bare:9.1f} graph {graph}")
    step = gemm_step(torch, GemmCase(2560, 7000, 2560), torch.float16, "cuda")
    for idle in (0.0, 0.5):
        time.sleep(idle)  # ok: the idle before the loops is what is measured
        loops = " ".join(f"{loop_us(torch, step, 50):.1f}" for _ in range(20))
        print(f"after {idle} s idle, successive 50-iteration loops, µs: {loops}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
