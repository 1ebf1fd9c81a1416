"""The cases a plan runs: DeepBench's training set (`full`), a spread-out tenth of it (`quick`)
and a few toy shapes (`tiny`) that let a CPU test the whole path in seconds.

The full set is read from DeepBench's own problem lists (bench/data/deepbench_shapes.csv), so a
result can be matched with the published V100 figure for the same shape.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from importlib import resources
from itertools import permutations
from typing import Literal

from dltui.formatting import exact_bytes
from dltui.plans import formulas
from dltui.plans.names import COLLECTIVES

Direction = Literal["h2d", "d2h", "d2d", "p2p"]
GiB = 1 << 30
MiB = 1 << 20
QUICK_PER_KIND = 10


@dataclass(frozen=True, slots=True)
class GemmCase:
    """C(m×n) = op(A)(m×k) · op(B)(k×n), column-major as cuBLAS and DeepBench see it."""

    m: int
    n: int
    k: int
    a_t: bool = False
    b_t: bool = False

    @property
    def label(self) -> str:
        return f"{self.m}x{self.n}x{self.k} {'T' if self.a_t else 'N'}{'T' if self.b_t else 'N'}"

    @property
    def params(self) -> dict[str, int]:
        return {"m": self.m, "n": self.n, "k": self.k, "a_t": int(self.a_t), "b_t": int(self.b_t)}

    @property
    def flops(self) -> float:
        return formulas.gemm_flops(self.m, self.n, self.k)


@dataclass(frozen=True, slots=True)
class ConvCase:
    """Batch n of c×h×w images through k filters of r×s (r tall, s wide)."""

    n: int
    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    pad_h: int = 0
    pad_w: int = 0
    stride_h: int = 1
    stride_w: int = 1

    @property
    def label(self) -> str:
        pad = f"{self.pad_h}" if self.pad_h == self.pad_w else f"{self.pad_h},{self.pad_w}"
        stride = (
            f"{self.stride_h}"
            if self.stride_h == self.stride_w
            else f"{self.stride_h},{self.stride_w}"
        )
        return f"{self.n}x{self.c}x{self.h}x{self.w} k{self.k} {self.r}x{self.s} p{pad} s{stride}"

    @property
    def params(self) -> dict[str, int]:
        return {
            "n": self.n, "c": self.c, "h": self.h, "w": self.w, "k": self.k, "r": self.r,
            "s": self.s, "pad_h": self.pad_h, "pad_w": self.pad_w, "stride_h": self.stride_h,
            "stride_w": self.stride_w,
        }  # fmt: skip

    @property
    def output_hw(self) -> tuple[int, int]:
        return (
            formulas.conv_output(self.h, self.r, self.pad_h, self.stride_h),
            formulas.conv_output(self.w, self.s, self.pad_w, self.stride_w),
        )

    @property
    def flops(self) -> float:
        return formulas.conv_flops(
            self.n, self.c, self.h, self.w, self.k, self.r, self.s, self.pad_h, self.pad_w,
            self.stride_h, self.stride_w,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class RnnCase:
    """One layer, input size = hidden, as DeepBench runs it. cell: vanilla (tanh), lstm, gru."""

    cell: str
    hidden: int
    batch: int
    steps: int

    @property
    def label(self) -> str:
        return f"{self.cell} h{self.hidden} n{self.batch} t{self.steps}"

    @property
    def params(self) -> dict[str, int]:
        return {"hidden": self.hidden, "batch": self.batch, "steps": self.steps}

    @property
    def flops(self) -> float:
        """One pass (forward, or one of the two backward passes), as DeepBench counts it."""
        return formulas.rnn_flops(self.cell, self.hidden, self.batch, self.steps)


@dataclass(frozen=True, slots=True)
class AttentionCase:
    """Scaled dot-product attention of `batch` × `heads` sequences of `seq` tokens, `head_dim`
    wide, as FlashAttention's benchmarks run it."""

    batch: int
    heads: int
    seq: int
    head_dim: int
    causal: bool

    @property
    def label(self) -> str:
        mask = " causal" if self.causal else ""
        return f"b{self.batch} h{self.heads} s{self.seq} d{self.head_dim}{mask}"

    @property
    def params(self) -> dict[str, int]:
        return {"batch": self.batch, "heads": self.heads, "seq": self.seq,
                "head_dim": self.head_dim, "causal": int(self.causal)}  # fmt: skip

    @property
    def flops(self) -> float:
        """The forward pass; fwd+bwd: formulas.attention_flops with that direction."""
        return formulas.attention_flops(
            self.batch, self.heads, self.seq, self.head_dim, self.causal, "fwd"
        )


@dataclass(frozen=True, slots=True)
class BandwidthCase:
    """One copy of `nbytes`. `on_host`: a host memcpy, what a machine without a GPU can offer in
    place of device-to-device; `src`/`dst` name the GPUs of a peer copy."""

    direction: Direction
    nbytes: int
    pinned: bool = False
    src: int = 0
    dst: int = 0
    on_host: bool = False

    @property
    def label(self) -> str:
        size = exact_bytes(self.nbytes)
        if self.on_host:
            return f"host memcpy {size}"
        if self.direction in ("h2d", "d2h"):
            return f"{self.direction} {'pinned' if self.pinned else 'pageable'} {size}"
        if self.direction == "p2p":
            return f"p2p {self.src}→{self.dst} {size}"
        return f"d2d {size}"

    @property
    def params(self) -> dict[str, int]:
        params = {"bytes": self.nbytes}
        if self.direction in ("h2d", "d2h"):
            params["pinned"] = int(self.pinned)
        if self.direction == "p2p":
            params |= {"src": self.src, "dst": self.dst}
        return params


@dataclass(frozen=True, slots=True)
class AllReduceCase:
    """A collective of `floats` 4-byte elements, nccl-tests' size: an all-reduce's or a
    broadcast's buffer, an all-gather's gathered output, a reduce-scatter's input, what each
    rank sends in an all-to-all."""

    floats: int

    @property
    def label(self) -> str:
        return f"{self.floats} floats"

    @property
    def params(self) -> dict[str, int]:
        return {"floats": self.floats, "bytes": 4 * self.floats}

    @property
    def nbytes(self) -> int:
        return 4 * self.floats


Case = GemmCase | ConvCase | RnnCase | AttentionCase | BandwidthCase | AllReduceCase
ComputeCase = GemmCase | ConvCase | RnnCase | AttentionCase


# --- reading DeepBench's lists -----------------------------------------------------------------


def case_from_row(row: dict[str, str]) -> Case:
    """A case from one row of DeepBench's tidy CSVs (the shape columns are shared by both)."""
    kind = row["kind"]

    def ints(*names: str) -> list[int]:
        return [int(row[name]) for name in names]

    if kind == "gemm":
        m, n, k = ints("m", "n", "k")
        return GemmCase(m, n, k, a_t=row["a_t"] == "T", b_t=row["b_t"] == "T")
    if kind == "conv":
        return ConvCase(
            *ints("n", "c", "h", "w", "k", "r", "s", "pad_h", "pad_w", "stride_h", "stride_w")
        )
    if kind == "rnn":
        return RnnCase(row["cell"], *ints("hidden", "batch", "timesteps"))
    if kind == "allreduce":
        return AllReduceCase(int(row["floats"]))
    raise ValueError(f"unknown kind {kind!r} in DeepBench's list")


def read_data_csv(name: str) -> list[dict[str, str]]:
    """Rows of one of the CSVs shipped in bench/data."""
    with resources.files("dltui.bench").joinpath("data", name).open(encoding="utf-8") as file:
        return list(csv.DictReader(file))


@cache
def _full(kind: str) -> tuple[Case, ...]:
    rows = read_data_csv("deepbench_shapes.csv")
    return tuple(case_from_row(row) for row in rows if row["kind"] == kind)


def _size_of(case: Case) -> float:
    return case.flops if isinstance(case, ComputeCase) else case.nbytes


def _spread_out(full: tuple[Case, ...], count: int) -> list[Case]:
    """`count` cases evenly spaced by work from smallest to largest: the range, deterministic.

    Duplicate shapes are dropped first (DeepBench lists four convs twice, for two models).
    """
    unique = sorted(dict.fromkeys(full), key=_size_of)  # stable sort: file order breaks ties
    if len(unique) <= count:
        return unique
    return [unique[round(i * (len(unique) - 1) / (count - 1))] for i in range(count)]


# --- the sets ----------------------------------------------------------------------------------

_TINY: dict[str, tuple[Case, ...]] = {
    "gemm": (
        GemmCase(64, 64, 64),
        GemmCase(128, 32, 64, a_t=True),
        GemmCase(96, 48, 128, b_t=True),
        GemmCase(32, 128, 96, a_t=True, b_t=True),
    ),
    "conv": (
        ConvCase(2, 3, 32, 32, 8, 3, 3, pad_h=1, pad_w=1),
        ConvCase(2, 8, 16, 20, 16, 5, 3, pad_h=2, pad_w=1, stride_h=2, stride_w=2),
        ConvCase(4, 16, 8, 8, 16, 1, 1),
    ),
    "rnn": (RnnCase("vanilla", 64, 4, 8), RnnCase("lstm", 64, 4, 8), RnnCase("gru", 64, 4, 8)),
    # 4 KiB to 32 MiB: a link curve's fit (dltui/predict/links.py) up to a bucket's size
    # (DDP's 25 MiB, TensorFlow's packs as dltui sets them), where an engine's rate can differ.
    "allreduce": (
        AllReduceCase(1024),
        AllReduceCase(32_768),
        AllReduceCase(262_144),
        AllReduceCase(1_048_576),
        AllReduceCase(8_388_608),
    ),
    "attention": (
        AttentionCase(2, 2, 64, 32, causal=False),
        AttentionCase(2, 2, 64, 32, causal=True),
        AttentionCase(1, 2, 128, 64, causal=True),
    ),
}
_COLLECTIVE_BYTES = {
    "tiny": (4 * 1024, 1 << 20),
    "quick": (1024, 32 * 1024, MiB, 32 * MiB, GiB, 4 * GiB),
    "full": tuple(1024 * 4**i for i in range(12)),
}
"""1 KB to 4 GB: every power of 32 (quick) or of 4 (full), as nccl-tests sweeps sizes."""
ATTENTION_TOKENS = 16_384
ATTENTION_WIDTH = 2048
_ATTENTION_SEQS = {"quick": (512, 2048, 8192), "full": (512, 1024, 2048, 4096, 8192, 16_384)}


def _attention_cases(seqs: tuple[int, ...]) -> list[Case]:
    """FlashAttention's benchmark: 16k tokens a batch (batch = 16k ÷ seq), 2,048 wide (heads =
    2048 ÷ head dim), head dims 64 and 128, causal and not."""
    return [
        AttentionCase(ATTENTION_TOKENS // seq, ATTENTION_WIDTH // dim, seq, dim, causal)
        for dim in (64, 128)
        for causal in (False, True)
        for seq in seqs
    ]


_BANDWIDTH_SIZES = {
    "tiny": (MiB, 4 * MiB),
    "quick": (GiB, 64 * MiB, MiB),
    "full": (GiB, 64 * MiB, MiB),
}


def _bandwidth_cases(sizes: tuple[int, ...], gpus: int) -> list[Case]:
    """Pinned and pageable copies each way, device-to-device, and every ordered GPU pair (a
    matrix like p2pBandwidthLatencyTest's). Without a GPU: a host memcpy, labelled so."""
    found: list[Case] = []
    for nbytes in sizes:
        if gpus == 0:
            found.append(BandwidthCase("d2d", nbytes, on_host=True))
            continue
        for direction in ("h2d", "d2h"):
            found += [BandwidthCase(direction, nbytes, pinned=p) for p in (True, False)]
        found.append(BandwidthCase("d2d", nbytes))
        found += [
            BandwidthCase("p2p", nbytes, src=a, dst=b) for a, b in permutations(range(gpus), 2)
        ]
    return found


def cases(shape_set: str, kind: str, gpus: int = 1) -> list[Case]:
    """The cases of one kind in one set. `gpus` shapes only the bandwidth set (peer pairs, or
    a host memcpy when 0)."""
    if kind == "bandwidth":
        return _bandwidth_cases(_BANDWIDTH_SIZES[shape_set], gpus)
    if kind == "attention" and shape_set != "tiny":
        return _attention_cases(_ATTENTION_SEQS[shape_set])
    if kind in COLLECTIVES and kind != "allreduce":
        return [AllReduceCase(nbytes // 4) for nbytes in _COLLECTIVE_BYTES[shape_set]]
    if shape_set == "tiny":
        return list(_TINY[kind])
    if shape_set == "quick":
        return _spread_out(_full(kind), QUICK_PER_KIND)
    if shape_set == "full":
        return list(_full(kind))
    raise ValueError(f"unknown shape set {shape_set!r}")
