"""Does dltui's kernel suite measure the GPU? Parity with DeepBench and with bare PyTorch loops.

Runs on a CUDA GPU (the H200 of docs/results/kernels-h200.md). Sections:

- gemm: every GEMM of DeepBench's training set, fp16 in and fp32 accumulation ("mixed"),
  against DeepBench's own gemm_bench on the same GPU (benchmarks/reference/
  deepbench_h200_gemm_measured.csv, column deepbench_fp16_acc32_us): the summed ratio, the
  shapes over 1.2× among those DeepBench takes ≥ 20 µs for, and the median ratio of the rest.
- conv, rnn: every pass of the set against a bare PyTorch loop in the same run: the same
  tensors (same padding), cudnn.benchmark on, every memory layout tried, iterations back to back
  between one pair of events; the best is the best known to PyTorch.
- square: bf16 8192³ through dltui against a bare loop of torch.mm, alternated.
- repeat: two kernel JSONs of the same plan (two `dltui bench kernels … --json` runs): how
  far apart each case's medians are.

dltui's own figures come from a product run's JSON (`--json FILE`, from `dltui bench kernels
--set full --kind gemm,conv,rnn --precision mixed --json FILE`), or, without one, from the
suite run in this process.

    python benchmarks/kernel_parity.py --json full.json [--sections gemm,conv,rnn,square]
    python benchmarks/kernel_parity.py --repeat a.json b.json
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dltui.bench.padding import padded  # noqa: E402
from dltui.bench.shapes import ConvCase, GemmCase, RnnCase  # noqa: E402
from dltui.protocol.bench_results import KernelResult  # noqa: E402

DEEPBENCH_H200 = ROOT / "benchmarks" / "reference" / "deepbench_h200_gemm_measured.csv"
SLOW = 1.2
"""A case this much slower than the reference is a miss."""
BIG_US = 20.0
"""Cases at least this long (in the reference) are held to SLOW; shorter ones to a median."""
REPEAT = 0.03


def load_results(path: Path) -> list[KernelResult]:
    document = json.loads(path.read_text())
    fields = set(KernelResult.__dataclass_fields__)
    return [
        KernelResult(**{key: value for key, value in row.items() if key in fields})
        for row in document["results"]
    ]


def run_suite(kinds: list[str], precision: str, shape_set: str) -> list[KernelResult]:
    from dltui.bench.suite import run_plan
    from dltui.protocol.bench_plans import KernelPlan

    plan = KernelPlan(shape_set=shape_set, kinds=kinds, precisions=[precision], device="cuda")
    results: list[KernelResult] = []
    run_plan(plan, results.append, lambda done, total, label: None)
    return results


# --- GEMM against DeepBench --------------------------------------------------------------------


def gemm_section(results: list[KernelResult]) -> dict[str, Any]:
    ours = {
        r.shape: r.median_s * 1e6
        for r in results
        if r.kind == "gemm" and r.precision == "mixed" and r.error is None
    }
    rows = []
    with DEEPBENCH_H200.open() as file:
        for row in csv.DictReader(file):
            case = GemmCase(int(row["m"]), int(row["n"]), int(row["k"]),
                            row["a_t"] == "t", row["b_t"] == "t")  # fmt: skip
            theirs = float(row["deepbench_fp16_acc32_us"])
            if case.label in ours:
                rows.append((case.label, ours[case.label], theirs))
    total_ours = sum(o for _, o, _ in rows)
    total_theirs = sum(t for _, _, t in rows)
    big = [(label, o / t, o, t) for label, o, t in rows if t >= BIG_US]
    small = [o / t for _, o, t in rows if t < BIG_US]
    over = sorted((r for r in big if r[1] > SLOW), key=lambda r: -r[1])
    print(f"\nGEMM, DeepBench training set, mixed: {len(rows)} of 160 shapes compared")
    print(f"  summed: dltui {total_ours / 1e3:.2f} ms, DeepBench {total_theirs / 1e3:.2f} ms, "
          f"ratio {total_ours / total_theirs:.3f} (target ≤ 1.03)")  # fmt: skip
    print(f"  shapes ≥ {BIG_US:.0f} µs in DeepBench: {len(big)}, over {SLOW}×: {len(over)}")
    for label, ratio, o, t in over:
        print(f"    {label:<24} {o:9.1f} µs against {t:7.0f}  {ratio:.2f}×")
    small_median = statistics.median(small) if small else None
    if small_median is not None:
        print(f"  shapes < {BIG_US:.0f} µs: {len(small)}, median ratio {small_median:.2f} "
              "(target ≤ 1.3; DeepBench rounds to whole µs)")  # fmt: skip
    worst = max(big, key=lambda r: r[1]) if big else None
    if worst:
        print(f"  worst ≥ {BIG_US:.0f} µs: {worst[0]} {worst[1]:.2f}×")
    return {
        "compared": len(rows),
        "sum_ratio": total_ours / total_theirs if total_theirs else None,
        "big": len(big),
        "big_over": [{"shape": s, "ratio": r} for s, r, _, _ in over],
        "small_median_ratio": small_median,
        "rows": [{"shape": s, "dltui_us": o, "deepbench_us": t} for s, o, t in rows],
    }


# --- bare PyTorch loops -------------------------------------------------------------------------


def loop_us(torch: Any, step: Callable[[], object], count: int) -> float:
    """Microseconds per call of `count` calls back to back between one pair of events."""
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(count):
        step()
    end.record()
    end.synchronize()
    return begin.elapsed_time(end) * 1e3 / count


def bare_loop_us(torch: Any, step: Callable[[], object], budget_s: float = 0.05) -> float:
    """Warm up (cudnn.benchmark searches here), then iterations back to back between one pair
    of events: what a careful PyTorch user measures."""
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    once_s = max(loop_us(torch, step, 1) / 1e6, 1e-6)
    return loop_us(torch, step, max(10, min(300, int(budget_s / once_s))))


def best_pytorch_us(torch: Any, result: KernelResult) -> float | None:
    """The best bare loop over every memory layout, cudnn.benchmark on, same padding."""
    from dltui.bench.backends import input_values
    from dltui.bench.backends.torch_backend import LAYOUTS, conv_step, rnn_step, set_precision

    torch.backends.cudnn.benchmark = True
    dtype = set_precision(torch, result.precision)
    params, fill = result.params, input_values(result.fill, result.precision)
    if result.kind == "conv":
        case = padded(ConvCase(**params), result.precision)
        assert isinstance(case, ConvCase)
        return min(
            bare_loop_us(
                torch, conv_step(torch, case, result.direction, dtype, "cuda", layout, fill)
            )
            for layout in LAYOUTS
        )
    if result.kind == "rnn":
        cell = result.shape.split()[0]
        rnn = RnnCase(cell, params["hidden"], params["batch"], params["steps"])
        return bare_loop_us(torch, rnn_step(torch, rnn, result.direction, dtype, "cuda", fill))
    return None


def pass_section(torch: Any, results: list[KernelResult], kind: str) -> dict[str, Any]:
    rows = []
    for result in results:
        if result.kind != kind or result.error is not None:
            continue
        best = best_pytorch_us(torch, result)
        if best is not None:
            rows.append((f"{result.shape} {result.direction}", result.median_s * 1e6, best,
                         result.method, result.layout))  # fmt: skip
            # As it goes: a run cut short still shows the passes it compared.
            print(f"  {rows[-1][0]:<40} {rows[-1][1]:9.1f} µs, best {best:9.1f}", flush=True)
    big = [r for r in rows if r[2] >= BIG_US or r[1] >= BIG_US]
    over = sorted((r for r in big if r[1] / r[2] > SLOW), key=lambda r: -r[1] / r[2])
    ours_total = sum(r[1] for r in rows)
    best_total = sum(r[2] for r in rows)
    print(f"\n{kind}: {len(rows)} passes against the best bare PyTorch loop (every layout)")
    print(f"  summed: dltui {ours_total / 1e3:.2f} ms, best PyTorch {best_total / 1e3:.2f} ms, "
          f"ratio {ours_total / best_total:.3f}")  # fmt: skip
    print(f"  passes ≥ {BIG_US:.0f} µs: {len(big)}, over {SLOW}×: {len(over)}")
    for label, ours, best, method, layout in over:
        print(f"    {label:<40} {ours:9.1f} µs against {best:9.1f}  {ours / best:.2f}× "
              f"({method}, {layout})")  # fmt: skip
    return {
        "passes": len(rows),
        "sum_ratio": ours_total / best_total if best_total else None,
        "big": len(big),
        "over": [{"pass": r[0], "ratio": r[1] / r[2]} for r in over],
        "rows": [
            {
                "pass": r[0],
                "dltui_us": r[1],
                "pytorch_best_us": r[2],
                "method": r[3],
                "layout": r[4],
            }
            for r in rows
        ],
    }


def square_section(torch: Any, rounds: int = 3) -> dict[str, Any]:
    """bf16 8192³ through dltui's measure() against a bare torch.mm loop, alternated so clocks
    and power capping treat both alike."""
    from dltui.bench.backends import load_backend
    from dltui.bench.suite import _Item, measure
    from dltui.plans.formulas import gemm_flops
    from dltui.protocol.bench_plans import KernelPlan

    backend = load_backend("torch", "cuda")
    case = GemmCase(8192, 8192, 8192)
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    ours, bare = [], []
    for _ in range(rounds):
        result = measure(backend, KernelPlan(device="cuda"), _Item("gemm", "bf16", case, "fwd"))
        ours.append(result.tflops)
        bare.append(gemm_flops(8192, 8192, 8192) / (bare_loop_us(torch, lambda: a @ b) * 1e6))
    ratio = statistics.median(ours) / statistics.median(bare)
    print(f"\nbf16 8192³: dltui {statistics.median(ours):.1f} TFLOP/s, bare loop "
          f"{statistics.median(bare):.1f}, ratio {ratio:.3f} (target ≥ 0.97)")  # fmt: skip
    return {"dltui_tflops": ours, "bare_tflops": bare, "ratio": ratio}


def repeat_section(first: Path, second: Path) -> dict[str, Any]:
    def medians(path: Path) -> dict[tuple[str, ...], float]:
        return {
            (r.kind, r.shape, r.direction, r.precision): r.median_s
            for r in load_results(path)
            if r.error is None
        }

    a, b = medians(first), medians(second)
    diffs = sorted(
        ((abs(a[key] - b[key]) / min(a[key], b[key]), key, a[key], b[key])
         for key in a.keys() & b.keys() if min(a[key], b[key]) >= BIG_US / 1e6),
        reverse=True,
    )  # fmt: skip
    apart = [d for d in diffs if d[0] > REPEAT]
    print(f"\nrepeatability: {len(diffs)} cases ≥ {BIG_US:.0f} µs in both runs, "
          f"{len(apart)} more than {REPEAT:.0%} apart, median "
          f"{statistics.median(d[0] for d in diffs):.2%}, worst {diffs[0][0]:.2%}")  # fmt: skip
    for diff, key, x, y in apart[:15]:
        print(f"    {' '.join(key):<52} {x * 1e6:9.1f} µs and {y * 1e6:9.1f}  {diff:.1%}")
    return {
        "cases": len(diffs),
        "apart": len(apart),
        "median": statistics.median(d[0] for d in diffs),
        "worst": diffs[0][0],
        "rows": [{"case": " ".join(k), "first_s": x, "second_s": y} for _, k, x, y in diffs],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="dltui's figures: a kernels JSON")
    parser.add_argument("--sections", default="gemm,conv,rnn,square")
    parser.add_argument("--set", dest="shape_set", default="full", help="when run in-process")
    parser.add_argument("--repeat", type=Path, nargs=2, metavar="JSON")
    parser.add_argument("--out", type=Path, help="write every figure here as JSON")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {}
    if args.repeat:
        report["repeat"] = repeat_section(*args.repeat)
    else:
        import torch

        sections = args.sections.split(",")
        kinds = [kind for kind in ("gemm", "conv", "rnn") if kind in sections]
        results = (
            load_results(args.json) if args.json else run_suite(kinds, "mixed", args.shape_set)
        )
        if "gemm" in sections:
            report["gemm"] = gemm_section(results)
        for kind in ("conv", "rnn"):
            if kind in sections:
                report[kind] = pass_section(torch, results, kind)
        if "square" in sections:
            report["square"] = square_section(torch)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
