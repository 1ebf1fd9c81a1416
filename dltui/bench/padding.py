"""Padding as DeepBench pads: 16-bit problems are rounded up to multiples of 8 so the library
can use its tensor-core kernels, and the rate still counts the problem as stated.

GEMM (DeepBench's gemm_bench, half precision): with B not transposed (NN, TN) m and k are
padded, with A not transposed and B transposed (NT) m and n, with both transposed all three;
a dimension is padded only when one of those is not a multiple of 8. Convolution (conv_bench):
input and output channels. What it buys on the H200 (4096×7133×4096 NT, five times faster
padded): docs/results/kernels-h200.md.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from dltui.bench.shapes import Case, ConvCase, GemmCase

MULTIPLE = 8
SIXTEEN_BIT = ("fp16", "bf16", "mixed")


def round_up(value: int, multiple: int = MULTIPLE) -> int:
    return -(-value // multiple) * multiple


def _gemm(case: GemmCase) -> GemmCase:
    names: tuple[str, ...]
    if not case.b_t:
        names = ("m", "k")
    elif not case.a_t:
        names = ("m", "n")
    else:
        names = ("m", "n", "k")
    if all(getattr(case, name) % MULTIPLE == 0 for name in names):
        return case
    padded: dict[str, Any] = {name: round_up(getattr(case, name)) for name in names}
    return replace(case, **padded)


def _conv(case: ConvCase) -> ConvCase:
    if case.c % MULTIPLE == 0 and case.k % MULTIPLE == 0:
        return case
    return replace(case, c=round_up(case.c), k=round_up(case.k))


def padded(case: Case, precision: str) -> Case:
    """The problem as it is timed: padded for 16-bit GEMMs and convolutions, else unchanged."""
    if precision not in SIXTEEN_BIT:
        return case
    if isinstance(case, GemmCase):
        return _gemm(case)
    if isinstance(case, ConvCase):
        return _conv(case)
    return case
