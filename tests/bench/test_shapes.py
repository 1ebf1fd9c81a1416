"""The shape sets: DeepBench's full training set, a spread-out quick set, a tiny CPU set."""

from __future__ import annotations

import pytest

from dltui.bench.shapes import (
    AllReduceCase,
    BandwidthCase,
    ConvCase,
    GemmCase,
    GiB,
    MiB,
    RnnCase,
    cases,
)

COMPUTE = ("gemm", "conv", "rnn")


@pytest.mark.parametrize(
    ("kind", "count"), [("gemm", 160), ("conv", 94), ("rnn", 53), ("allreduce", 7)]
)
def test_full_set_is_deepbench_training_set(kind, count):
    assert len(cases("full", kind)) == count


def test_full_set_parses_types_and_transposes():
    gemms = cases("full", "gemm")
    assert GemmCase(1760, 16, 1760) == gemms[0]
    assert GemmCase(5124, 9124, 2560) in gemms
    assert {(c.a_t, c.b_t) for c in gemms} == {(False, False), (True, False), (False, True)}
    assert ConvCase(4, 1, 161, 700, 32, 5, 20, 0, 0, 2, 2) == cases("full", "conv")[0]
    assert {c.cell for c in cases("full", "rnn")} == {"vanilla", "lstm", "gru"}
    assert AllReduceCase(100_000) == cases("full", "allreduce")[0]


@pytest.mark.parametrize("kind", [*COMPUTE, "allreduce"])
def test_quick_set_is_a_spread_out_subset_of_full(kind):
    full = cases("full", kind)
    quick = cases("quick", kind)
    assert len(quick) == min(10, len(set(full)))
    assert set(quick) <= set(full)
    assert len(set(quick)) == len(quick)
    assert quick == cases("quick", kind)  # deterministic
    size = (lambda c: c.nbytes) if kind == "allreduce" else (lambda c: c.flops)
    sizes = [size(c) for c in quick]
    assert sizes == sorted(sizes)
    assert sizes[0] == min(map(size, full)) and sizes[-1] == max(map(size, full))


def test_quick_rnn_covers_every_cell():
    assert {c.cell for c in cases("quick", "rnn")} == {"vanilla", "lstm", "gru"}


@pytest.mark.parametrize("kind", COMPUTE)
def test_tiny_set_is_small(kind):
    tiny = cases("tiny", kind)
    assert 2 <= len(tiny) <= 5
    assert all(c.flops < 1e8 for c in tiny)


def test_labels_and_params():
    gemm = GemmCase(5124, 9124, 2560)
    assert gemm.label == "5124x9124x2560 NN"
    assert GemmCase(35, 8457, 1760, a_t=True).label == "35x8457x1760 TN"
    assert gemm.params == {"m": 5124, "n": 9124, "k": 2560, "a_t": 0, "b_t": 0}
    conv = ConvCase(16, 64, 224, 224, 64, 3, 3, 1, 1, 1, 1)
    assert conv.label == "16x64x224x224 k64 3x3 p1 s1"
    assert conv.output_hw == (224, 224)
    assert ConvCase(2, 8, 16, 20, 16, 5, 3, 2, 1, 2, 2).label == "2x8x16x20 k16 5x3 p2,1 s2"
    assert RnnCase("lstm", 1536, 32, 50).label == "lstm h1536 n32 t50"
    assert AllReduceCase(1024).params == {"floats": 1024, "bytes": 4096}
    for kind in (*COMPUTE, "allreduce"):
        for case in cases("full", kind):
            assert all(type(v) is int for v in case.params.values()), case


def test_bandwidth_with_gpus_lists_every_direction_and_ordered_pair():
    found = cases("quick", "bandwidth", gpus=4)
    assert {c.nbytes for c in found} == {GiB, 64 * MiB, MiB}
    per_size = [c for c in found if c.nbytes == GiB]
    assert sum(c.direction == "p2p" for c in per_size) == 12  # 4 GPUs: 4·3 ordered pairs
    assert {(c.direction, c.pinned) for c in per_size if c.direction in ("h2d", "d2h")} == {
        ("h2d", True),
        ("h2d", False),
        ("d2h", True),
        ("d2h", False),
    }
    assert BandwidthCase("p2p", GiB, src=2, dst=3).label == "p2p 2→3 1 GiB"
    assert BandwidthCase("h2d", MiB, pinned=True).params == {"bytes": MiB, "pinned": 1}
    assert not any(c.direction == "p2p" for c in cases("quick", "bandwidth", gpus=1))


def test_bandwidth_without_gpu_is_a_labelled_host_memcpy():
    found = cases("tiny", "bandwidth", gpus=0)
    assert [c.label for c in found] == ["host memcpy 1 MiB", "host memcpy 4 MiB"]
    assert all(c.on_host and c.nbytes <= 4 * MiB for c in found)


def test_unknown_set_is_refused():
    with pytest.raises(ValueError):
        cases("huge", "gemm")
