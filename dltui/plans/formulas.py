"""The formulas, written once: FLOP counts, bandwidths, scaling efficiency and the statistics
reported for every timed case. Units: seconds in, TFLOP/s (10¹²) and GB/s (10⁹ B/s) out.
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Sequence

# --- FLOP counts, as DeepBench's result sheets compute them ------------------------------------


def gemm_flops(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


def conv_output(size: int, filter_size: int, pad: int, stride: int) -> int:
    """Output height or width of a convolution (floor division, as cuDNN computes it)."""
    return (size + 2 * pad - filter_size) // stride + 1


def conv_flops(
    n: int, c: int, h: int, w: int, k: int, r: int, s: int, pad_h: int, pad_w: int, stride_h: int,
    stride_w: int,
) -> float:  # fmt: skip
    """2·N·K·P·Q·C·R·S: the direct-convolution count, the same for every pass."""
    p = conv_output(h, r, pad_h, stride_h)
    q = conv_output(w, s, pad_w, stride_w)
    return 2.0 * n * k * p * q * c * r * s


def rnn_flops(cell: str, hidden: int, batch: int, steps: int) -> float:
    """One pass of a DeepBench RNN (input size = hidden): vanilla 2TNH²+TNH, LSTM 8TNH²,
    GRU 6TNH², the same count for every pass."""
    t, n, h = steps, batch, hidden
    if cell == "vanilla":
        return 2.0 * t * n * h * h + t * n * h
    if cell == "lstm":
        return 8.0 * t * n * h * h
    if cell == "gru":
        return 6.0 * t * n * h * h
    raise ValueError(f"unknown RNN cell {cell!r}")


def rnn_fwd_bwd_flops(cell: str, hidden: int, batch: int, steps: int) -> float:
    """A training step of a DeepBench RNN: forward, backward-data and backward-weights, three
    passes of the same count (DeepBench reports fwd+bwd as a time; this makes it a rate)."""
    return 3.0 * rnn_flops(cell, hidden, batch, steps)


def attention_flops(
    batch: int, heads: int, seq: int, head_dim: int, causal: bool, direction: str
) -> float:
    """FlashAttention's count: 4·B·H·S²·d for the forward pass (two S×S×d products), half of
    it when causal, and the backward pass 2.5 times the forward (five products, not two)."""
    forward = 4.0 * batch * heads * seq * seq * head_dim / (2 if causal else 1)
    if direction == "fwd":
        return forward
    if direction == "fwd+bwd":
        return forward * 3.5
    raise ValueError(f"no attention pass {direction!r}")


def tflops(flops: float, seconds: float) -> float:
    return flops / seconds / 1e12


# --- bandwidth ---------------------------------------------------------------------------------


def gbps(nbytes: float, seconds: float) -> float:
    return nbytes / seconds / 1e9


def collective_busbw(op: str, algbw: float, ranks: int) -> float:
    """nccl-tests' bus bandwidth of each collective: all-reduce moves 2(n−1)/n of its bytes
    over each rank's link, all-gather, reduce-scatter and all-to-all (n−1)/n, broadcast all of
    them. algbw is nccl-tests' size over time (all-gather: the gathered output; reduce-scatter:
    the input; all-to-all: what each rank sends; broadcast: the buffer)."""
    share = (ranks - 1) / ranks
    factors = {"allreduce": 2.0 * share, "allgather": share, "reducescatter": share,
               "alltoall": share, "broadcast": 1.0}  # fmt: skip
    if op not in factors:
        raise ValueError(f"unknown collective {op!r}")
    return algbw * factors[op] if ranks > 1 else algbw


# --- per watt ----------------------------------------------------------------------------------

MIN_ENERGY_WINDOW_S = 0.3
"""The energy counter moves in steps (every 100 ms on the H200); joules between two of its
updates at least this far apart give the power to ~2%. Less: "too short", not a number."""


def watts(energy_j: float | None, energy_s: float | None) -> float | None:
    """Mean power over a span of the energy counter long enough to trust, else None."""
    if energy_j is None or energy_s is None or energy_s < MIN_ENERGY_WINDOW_S:
        return None
    return energy_j / energy_s


def kernel_per_watt(
    tflops: float | None,
    median_s: float,
    sustained_s: float | None,
    energy_j: float | None,
    energy_s: float | None,
) -> float | None:
    """TFLOP/s per watt of a kernel, from its sustained run: the rate it ran at there (the
    timed rate scaled by median ÷ sustained time) over the power the counter read across it.
    None where the case had no sustained run or the counter's span was too short."""
    power = watts(energy_j, energy_s)
    if tflops is None or power is None or not sustained_s or not median_s:
        return None
    return tflops * median_s / sustained_s / power


# --- scaling -----------------------------------------------------------------------------------


def scaling_efficiency(throughput_n: float, throughput_1: float, n: int) -> float:
    """Throughput on N ÷ (N × throughput on 1): 1.0 is perfect scaling."""
    return throughput_n / (n * throughput_1)


IMPLAUSIBLE_EFFICIENCY = 1.05
"""Above this, scaling "beats" perfect: a noisy baseline, or CPU processes sharing cores,
more likely than the hardware. Shown flagged, never plain."""


# --- statistics --------------------------------------------------------------------------------


def at(points: Sequence[tuple[float, float]], x: float) -> float:
    """The value at `x` on the line through `points` (sorted by x), held flat past either end:
    a counter read at moments between its readings."""
    after = bisect.bisect_left(points, x, key=lambda point: point[0])
    if after == 0:
        return points[0][1]
    if after == len(points):
        return points[-1][1]
    (x0, y0), (x1, y1) = points[after - 1], points[after]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def median(times: Sequence[float]) -> float:
    return statistics.median(times)


def spread(times: Sequence[float]) -> float:
    """1.4826 × the median absolute deviation: a robust standard deviation, as
    tf_cnn_benchmarks reports its jitter."""
    centre = statistics.median(times)
    return 1.4826 * statistics.median(abs(t - centre) for t in times)


NOISY_SPREAD = 0.05
"""A figure whose spread exceeds this fraction of its median is shown dimmed, and a ratio
made from it flagged: two servers cannot be told apart at that noise."""


def noisy(centre: float, spread_: float) -> bool:
    return centre > 0 and spread_ / centre > NOISY_SPREAD
