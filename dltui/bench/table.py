"""Results as text: one line per timed case, for the CLI's table and the TUI's results panel."""

from __future__ import annotations

from dltui.formatting import fmt_duration, fmt_rate
from dltui.protocol.messages import KernelResult

HEADER = (
    f"{'kind':<9} {'shape':<28} {'pass':<11} {'prec':<5} {'median':>10} {'±':>8} "
    f"{'rate':>14} {'busbw':>10} {'vs V100':>8}"
)


def rate_text(result: KernelResult) -> str:
    """The figure a reader compares: TFLOP/s for compute, GB/s for data movement."""
    if result.tflops is not None:
        if result.tflops < 1:
            return f"{result.tflops * 1000:.1f} GFLOP/s"
        return f"{result.tflops:.1f} TFLOP/s"
    if result.gbps is not None:
        return fmt_rate(result.gbps * 1e9)
    return "–"


def ratio_text(result: KernelResult) -> str:
    return f"{result.ratio:.2f}×" if result.ratio is not None else ""


def format_row(result: KernelResult) -> str:
    if result.error is not None:
        return (
            f"{result.kind:<9} {result.shape[:28]:<28} {result.direction:<11} "
            f"{result.precision:<5} error: {result.error}"
        )
    busbw = fmt_rate(result.busbw_gbps * 1e9) if result.busbw_gbps is not None else ""
    return (
        f"{result.kind:<9} {result.shape[:28]:<28} {result.direction:<11} {result.precision:<5} "
        f"{fmt_duration(result.median_s):>10} {fmt_duration(result.spread_s):>8} "
        f"{rate_text(result):>14} {busbw:>10} {ratio_text(result):>8}"
    )
