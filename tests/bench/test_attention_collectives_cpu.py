"""Attention and the collectives beyond all-reduce on this CPU: attention's backends searched
and its TFLOP/s counted as FlashAttention counts them, each backend's output the softmax it
must be; all-gather, reduce-scatter, all-to-all and broadcast over two Gloo processes with
nccl-tests' bus bandwidth, and a collective that moves the wrong part caught by its check."""

from __future__ import annotations

import math

import pytest

from dltui.bench.shapes import AttentionCase, cases
from dltui.bench.suite import run_plan
from dltui.plans import formulas
from dltui.protocol.bench_plans import KernelPlan
from dltui.protocol.bench_results import KernelResult
from tests.conftest import SLOW, require

FAST = {"shape_set": "tiny", "device": "cpu", "iterations": 20, "max_seconds": 0.2}


def run(plan: KernelPlan) -> list[KernelResult]:
    results: list[KernelResult] = []
    run_plan(plan, results.append, lambda *_: None)
    return results


def test_attention_on_the_cpu_reports_flashattentions_tflops():
    require("torch")
    results = run(KernelPlan(kinds=["attention"], precisions=["fp32"], **FAST))
    tiny = cases("tiny", "attention")
    assert [(r.shape, r.direction) for r in results] == [
        (case.label, direction) for case in tiny for direction in ("fwd", "fwd+bwd")
    ]
    for r, (case, direction) in zip(
        results, [(c, d) for c in tiny for d in ("fwd", "fwd+bwd")], strict=True
    ):
        assert r.error is None, r.error
        assert isinstance(case, AttentionCase)
        flops = formulas.attention_flops(
            case.batch, case.heads, case.seq, case.head_dim, case.causal, direction
        )
        assert r.tflops == pytest.approx(flops / r.median_s / 1e12)
        assert 1e-6 < r.tflops < 5, r.tflops  # two CPU cores: far below a teraflop
        assert r.backend in ("flash", "math", "efficient", "cudnn")  # the fastest that ran
        assert r.params["causal"] == int(case.causal) and r.fill == "random"


def test_attention_with_the_frameworks_choice_names_no_backend():
    require("torch")
    plan = KernelPlan(kinds=["attention"], precisions=["fp32"], tuning="default", **FAST)
    results = run(plan)
    assert results and all(r.error is None and r.backend is None for r in results)


@pytest.mark.parametrize("backend", ["math", "flash"])
@pytest.mark.parametrize("causal", [False, True])
def test_each_backends_attention_is_the_softmax_it_must_be(backend, causal):
    require("torch")
    import torch

    from dltui.bench.backends.torch_backend import attention_step

    case = AttentionCase(2, 3, 16, 8, causal)
    torch.manual_seed(0)
    out = attention_step(torch, case, "fwd", torch.float32, "cpu", backend)()
    torch.manual_seed(0)  # the same draws: the step's q, k and v
    q, k, v = (torch.randn(2, 3, 16, 8) for _ in range(3))
    scores = q @ k.transpose(-1, -2) / math.sqrt(case.head_dim)
    if causal:
        scores = scores.masked_fill(torch.ones(16, 16, dtype=torch.bool).triu(1), -math.inf)
    assert torch.allclose(out, scores.softmax(-1) @ v, atol=1e-5)
    grads = attention_step(torch, case, "fwd+bwd", torch.float32, "cpu", backend)()
    assert len(grads) == 3 and all(g.shape == (2, 3, 16, 8) for g in grads)


OPS = ("allgather", "reducescatter", "alltoall", "broadcast")


@SLOW
def test_collectives_over_two_gloo_processes():
    """One group of two ranks runs every collective of the plan; each rank checked one call's
    output (which rank's values landed where) before timing it."""
    require("torch")
    plan = KernelPlan(kinds=list(OPS), device="cpu", gpus=2, shape_set="tiny", warmup=1,
                      iterations=5, max_seconds=0.2)  # fmt: skip
    progress: list[tuple[int, int, str]] = []
    results: list[KernelResult] = []
    run_plan(plan, results.append, lambda *step: progress.append(step))
    assert [(r.kind, r.params["bytes"]) for r in results] == [
        (op, size) for op in OPS for size in (4096, 1 << 20)
    ]
    for r in results:
        assert r.error is None, r.error
        assert (r.direction, r.params["ranks"]) == (r.kind, 2)
        assert r.gbps == pytest.approx(r.params["bytes"] / r.median_s / 1e9)
        share = 1.0 if r.kind == "broadcast" else 0.5  # nccl-tests' (n-1)/n at n = 2
        assert r.busbw_gbps == pytest.approx(r.gbps * share)
    assert [label for _, _, label in progress[:2]] == ["allgather 1024 floats",
                                                       "allgather 262144 floats"]  # fmt: skip
    assert progress[-1] == (8, 8, "done")


def test_a_split_collective_moves_a_multiple_of_the_ranks():
    from dltui.bench.kernels.collectives import elements

    assert elements("allgather", 1001, 4) == 1000 and elements("alltoall", 3, 4) == 4
    assert elements("broadcast", 1001, 4) == 1001 == elements("allreduce", 1001, 4)


def test_a_collective_that_moves_the_wrong_part_fails_its_check(tmp_path):
    require("torch")
    import torch
    import torch.distributed as dist

    from dltui.bench.kernels.collectives import prepare

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0,
                            world_size=1)  # fmt: skip
    try:
        for op in ("allreduce", "allgather", "reducescatter", "alltoall", "broadcast"):
            prepared = prepare(torch, op, 8, 0, 1, torch.device("cpu"))
            prepared.step()
            assert prepared.check() is None, op
        # One rank of a world of two that never called: the buffers hold what was sent.
        gathered = prepare(torch, "allgather", 8, 0, 2, torch.device("cpu"))
        assert "allgather gave" in (gathered.check() or "")
        moved = prepare(torch, "alltoall", 8, 1, 2, torch.device("cpu"))
        assert "alltoall gave" in (moved.check() or "")
    finally:
        dist.destroy_process_group()
