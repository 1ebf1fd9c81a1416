"""The transformer workloads' arithmetic, written once in plans/: FlashAttention's FLOP count,
nccl-tests' bus bandwidth per collective, the GPT models' parameters and FLOPs a token, the
dense 16-bit peaks MFU divides by (and the GPUs it refuses), and the checks on such plans."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dltui.bench.training import TrainJob
from dltui.bench.training.settings import GptSettings, resolve_gpt, token_result
from dltui.plans import formulas, gpt
from dltui.plans.check import PlanError, check_plan
from dltui.plans.peaks import dense_16bit_peak, mfu
from dltui.protocol.bench_plans import ClusterRole, KernelPlan, ModelPlan


def test_attention_flops_as_flashattention_counts_them():
    # FlashAttention's benchmark: 4·B·H·S²·d forward, halved when causal, ×2.5 backward.
    forward = formulas.attention_flops(8, 16, 2048, 128, causal=False, direction="fwd")
    assert forward == 4 * 8 * 16 * 2048**2 * 128
    assert formulas.attention_flops(8, 16, 2048, 128, True, "fwd") == forward / 2
    assert formulas.attention_flops(8, 16, 2048, 128, False, "fwd+bwd") == forward * 3.5
    assert formulas.attention_flops(8, 16, 2048, 128, True, "fwd+bwd") == forward * 3.5 / 2
    with pytest.raises(ValueError, match="no attention pass"):
        formulas.attention_flops(1, 1, 1, 1, False, "bwd")


@pytest.mark.parametrize("ranks", [2, 4, 8])
def test_bus_bandwidth_as_nccl_tests_defines_it(ranks):
    share = (ranks - 1) / ranks
    assert formulas.collective_busbw("allreduce", 10.0, ranks) == pytest.approx(20 * share)
    for op in ("allgather", "reducescatter", "alltoall"):
        assert formulas.collective_busbw(op, 10.0, ranks) == pytest.approx(10 * share)
    assert formulas.collective_busbw("broadcast", 10.0, ranks) == 10.0
    with pytest.raises(ValueError, match="unknown collective"):
        formulas.collective_busbw("gossip", 1.0, ranks)


def test_one_rank_moves_nothing_over_a_bus():
    assert formulas.collective_busbw("allgather", 7.0, 1) == 7.0


def test_the_gpt_shapes_have_their_published_sizes():
    # GPT-2 small 124M (with the padded vocabulary and 2k positions: 125M), medium 350M,
    # GPT-3 XL 1.3B.
    sizes = {name: gpt.parameters(shape) / 1e6 for name, shape in gpt.SHAPES.items()}
    assert sizes["gpt-124m"] == pytest.approx(125.2, abs=0.1)
    assert sizes["gpt-350m"] == pytest.approx(355.6, abs=0.1)
    assert sizes["gpt-1.3b"] == pytest.approx(1315.3, abs=0.1)


def test_the_flops_a_token_are_six_n_plus_attention():
    shape = gpt.SHAPES["gpt-124m"]
    n = gpt.flop_parameters(shape)
    assert n == gpt.parameters(shape) - 2048 * 768  # not the position embedding: a lookup
    per_token = gpt.train_flops_per_token(shape, 2048)
    assert per_token == 6 * n + 12 * 12 * 768 * 2048
    assert per_token == pytest.approx(0.968e9, rel=1e-3)


def test_mfu_over_the_dense_peak():
    # 1.3B at 2k: 9.07 GFLOP a token; 60% of 8 × 989 TFLOP/s is 523k tokens/s.
    per_token = gpt.train_flops_per_token(gpt.SHAPES["gpt-1.3b"], 2048)
    tokens_per_s = 0.6 * 8 * 989e12 / per_token
    assert mfu(per_token, tokens_per_s, 8, 989.0) == pytest.approx(0.6)
    assert mfu(per_token, tokens_per_s, 8, None) is None


@pytest.mark.parametrize(
    ("name", "label", "peak"),
    [
        ("NVIDIA H200", "H200 SXM", 989.0),
        ("NVIDIA H100 80GB HBM3", "H100 SXM", 989.0),
        ("NVIDIA H100 PCIe", "H100 PCIe", 756.0),
        ("NVIDIA H100 NVL", "H100 NVL", 835.0),
        ("NVIDIA H200 NVL", "H200 NVL", 835.0),
        ("NVIDIA A100-SXM4-80GB", "A100", 312.0),
    ],
)
def test_the_dense_peaks_never_the_sparse_figure(name, label, peak):
    assert dense_16bit_peak(name) == (label, peak)
    assert peak < 1979  # H100/H200's 2:4-sparse figure, which put other tools over 100%


@pytest.mark.parametrize("name", ["NVIDIA GeForce RTX 4090", "Tesla V100-SXM2-16GB", "", "H1OO"])
def test_an_unknown_gpu_has_no_peak(name):
    assert dense_16bit_peak(name) is None


def job(**fields) -> TrainJob:
    base = TrainJob("torch", "gpt-124m", "auto", 1, 1, None, None, None, None, 1, 2, 224, 1000,
                    6e-4, None, None, 0.2, 1, 60.0)  # fmt: skip
    return replace(base, **fields)


def test_mfu_refuses_an_unknown_gpu_and_a_32_bit_run():
    settings = GptSettings(batch=4, seq=2048, precision="bf16", compile=True, checkpoint=False)
    times = [0.5, 0.5]
    known = token_result(job(), settings, "torch", "cuda", 8, times, [11.0, 10.0], "NVIDIA H200", 1)
    assert known.tokens_per_s == 8 * 4 * 2048 * 2 / 1.0
    assert known.peak_tflops == 989.0
    assert known.mfu == pytest.approx(
        gpt.train_flops_per_token(gpt.SHAPES["gpt-124m"], 2048) * known.tokens_per_s / (8 * 989e12)
    )
    unknown = token_result(
        job(), settings, "torch", "cuda", 8, times, [], "NVIDIA GeForce RTX 4090", 1
    )
    assert unknown.mfu is None and unknown.peak_tflops is None and unknown.tokens_per_s
    fp32 = replace(settings, precision="fp32")
    assert token_result(job(), fp32, "torch", "cuda", 8, times, [], "NVIDIA H200", 1).mfu is None
    assert token_result(job(), settings, "torch", "cpu", 2, times, [], None, None).mfu is None


def test_the_batch_fits_the_gpu_or_is_checkpointed():
    h200 = 141 * 10**9
    assert resolve_gpt(job(model="gpt-1.3b"), h200, 1) == GptSettings(16, 2048, "bf16", True, False)
    # Twice the sequence: half the batch, as many tokens.
    assert resolve_gpt(job(model="gpt-1.3b", seq_len=4096), h200, 1).batch == 8
    # An 80 GB H100: half the H200's batch, not recomputed activations (the H200's batch of 32
    # ran out of memory on one, its peak measured at 70.1 GB).
    h100 = resolve_gpt(job(model="gpt-124m"), 85 * 10**9, 1)
    assert (h100.batch, h100.checkpoint) == (16, False)
    shape = gpt.SHAPES["gpt-124m"]
    assert gpt.memory_bytes(shape, 32, 2048, False) > 70.1e9
    # A 40 GB GPU: the 1.3B model's batch shrinks as far as it must.
    shape = gpt.SHAPES["gpt-1.3b"]
    small = resolve_gpt(job(model="gpt-1.3b"), 40 * 10**9, 1)
    assert small.batch < 16
    assert gpt.memory_bytes(shape, small.batch, 2048, small.checkpoint) <= 40e9 * 0.85
    # Where halving once is not enough, activations are recomputed before the batch halves.
    assert gpt.fit(shape, 16, 2048, 60 * 10**9) == (16, True)
    # A batch asked for is kept, checkpointed where it needs to be.
    asked = resolve_gpt(job(model="gpt-1.3b", batch=16), 40 * 10**9, 1)
    assert (asked.batch, asked.checkpoint) == (16, True)
    # FSDP shards the weights and the optimizer's state: more room for activations.
    sharded = gpt.memory_bytes(shape, 16, 2048, False, shards=8)
    assert sharded < gpt.memory_bytes(shape, 16, 2048, False) - 16 * gpt.parameters(shape) * 0.8
    cpu = resolve_gpt(job(model="gpt-tiny"), None, 2)
    assert cpu == GptSettings(16, 64, "fp32", False, False)


ACROSS = KernelPlan(kinds=["attention", "alltoall"], cluster=ClusterRole("a", 1, 0, 1, 2))


@pytest.mark.parametrize(
    ("plan", "words"),
    [
        (ModelPlan(models=["gpt-124m"], parallel="zero3"), "unknown parallelism"),
        (ModelPlan(models=["gpt-124m"], seq_len=4), "seq_len must be"),
        (ModelPlan(models=["gpt-124m"], seq_len=1 << 20), "seq_len must be"),
        (ModelPlan(framework="tensorflow", models=["gpt-124m"], parallel="fsdp"), "FSDP runs"),
        (ModelPlan(models=["gpt-tiny"], data_dir="/d", target_accuracy=0.5), "synthetic tokens"),
        (KernelPlan(framework="tensorflow", kinds=["allgather"]), "all-reduce only"),
        (ACROSS, "only the collectives"),
    ],
)
def test_bad_transformer_plans_are_refused(plan, words):
    with pytest.raises(PlanError, match=words):
        check_plan(plan)


def test_good_transformer_plans_pass():
    check_plan(ModelPlan(models=["gpt-124m", "gpt-1.3b"], seq_len=4096, parallel="fsdp"))
    check_plan(KernelPlan(kinds=["attention", "allgather", "reducescatter", "alltoall",
                                 "broadcast"], precisions=["bf16"]))  # fmt: skip
    check_plan(KernelPlan(kinds=["allgather", "alltoall"], cluster=ClusterRole("a", 1, 0, 1, 2)))


def test_the_learning_rate_rises_over_the_first_steps():
    rising = [gpt.warmup_factor(step) for step in range(gpt.RATE_WARMUP_STEPS + 2)]
    assert rising[0] == 1 / gpt.RATE_WARMUP_STEPS and rising[-3:] == [1.0, 1.0, 1.0]
    assert rising == sorted(rising)
