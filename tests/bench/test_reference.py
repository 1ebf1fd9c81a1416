"""Lookup of DeepBench's published V100 figures."""

from __future__ import annotations

import pytest

from dltui.bench.reference import Reference, lookup, published_mfu, ratio, reference_gpu
from dltui.bench.shapes import AttentionCase, ConvCase, GemmCase, RnnCase, cases


def test_headline_gemm_mixed_and_fp32():
    case = GemmCase(5124, 9124, 2560)
    assert lookup("gemm", case, "mixed", "fwd") == Reference(96.5969, 2.478)
    assert lookup("gemm", case, "fp32", "fwd") == Reference(12.8782, 18.587)
    # 16-bit precisions compare with the "mixed" rows; tf32 with fp32 (the V100 has no TF32)
    assert lookup("gemm", case, "bf16", "fwd") == lookup("gemm", case, "fp16", "fwd")
    assert lookup("gemm", case, "tf32", "fwd") == lookup("gemm", case, "fp32", "fwd")
    assert lookup("gemm", GemmCase(5124, 9124, 2560, a_t=True), "mixed", "fwd").tflops == 92.1351


def test_shape_not_in_the_sheet_has_none():
    assert lookup("gemm", GemmCase(64, 64, 64), "fp32", "fwd") is None
    assert lookup("gemm", GemmCase(5124, 9124, 2560, b_t=True), "fp32", "fwd") is None
    assert lookup("gemm", GemmCase(5124, 9124, 2560), "fp32", "bwd_data") is None


def test_k_1536_rows_that_the_sheet_mistyped_as_1530():
    found = lookup("gemm", GemmCase(4608, 24000, 1536, a_t=True), "fp32", "fwd")
    assert found.ms == 24.308
    assert found.tflops == pytest.approx(2 * 4608 * 24000 * 1536 / 24.308e-3 / 1e12, rel=1e-5)


@pytest.mark.parametrize("precision", ["fp32", "mixed"])
def test_every_full_case_has_a_reference(precision):
    passes = {"gemm": ["fwd"], "conv": ["fwd", "bwd_weights"], "rnn": ["fwd", "fwd+bwd"]}
    for kind, directions in passes.items():
        for case in cases("full", kind):
            for direction in directions:
                assert lookup(kind, case, precision, direction) is not None, (case, direction)


def test_conv_passes_and_input_layer_without_bwd_data():
    layer1 = ConvCase(4, 1, 161, 700, 32, 5, 20, 0, 0, 2, 2)
    assert lookup("conv", layer1, "fp32", "fwd") == Reference(8.84152, 0.078)
    assert lookup("conv", layer1, "fp32", "bwd_weights") == Reference(5.43022, 0.127)
    assert lookup("conv", layer1, "fp32", "bwd_data") is None  # the sheet: N/A (input layer)


def test_rnn_fwd_has_a_rate_fwd_bwd_only_a_time():
    case = RnnCase("vanilla", 1760, 16, 50)
    assert lookup("rnn", case, "fp32", "fwd") == Reference(1.18009, 4.201)
    assert lookup("rnn", case, "fp32", "fwd+bwd") == Reference(None, 7.67)


def test_ratio_is_ours_over_theirs():
    assert ratio(Reference(96.6, 2.478), 193.2, 1.239e-3) == pytest.approx(2.0)
    assert ratio(Reference(None, 7.67), None, 3.835e-3) == pytest.approx(2.0)  # time ratio


def test_attention_compares_with_flashattentions_h100_figures():
    quick = {case.label: case for case in cases("quick", "attention")}
    forward = lookup("attention", quick["b8 h16 s2048 d128"], "bf16", "fwd")
    assert forward == Reference(625.0, None)
    causal = AttentionCase(4, 16, 4096, 128, causal=True)
    assert lookup("attention", causal, "fp16", "fwd") == Reference(579.0, None)
    both = AttentionCase(1, 16, 16_384, 128, causal=False)
    assert lookup("attention", both, "bf16", "fwd+bwd") == Reference(338, None)
    # Not the paper's: head dim 64, fp32, another batch.
    assert lookup("attention", quick["b8 h32 s2048 d64"], "bf16", "fwd") is None
    assert lookup("attention", quick["b8 h16 s2048 d128"], "fp32", "fwd") is None
    assert lookup("attention", AttentionCase(2, 16, 2048, 128, False), "bf16",
                            "fwd") is None  # fmt: skip
    assert reference_gpu("attention").startswith("H100")
    assert reference_gpu("gemm") == "V100"
    assert "torchtitan" in published_mfu() and "Megatron" in published_mfu()
