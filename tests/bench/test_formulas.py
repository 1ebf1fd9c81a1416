"""The formulas against figures computed by hand and against DeepBench's own V100 sheet."""

from __future__ import annotations

import pytest

from dltui.plans import formulas


def test_gemm_flops_of_deepbench_headline_shape():
    assert formulas.gemm_flops(5124, 9124, 2560) == 2 * 5124 * 9124 * 2560
    assert formulas.gemm_flops(5124, 9124, 2560) == pytest.approx(2.393e11, rel=1e-3)


@pytest.mark.parametrize(
    ("size", "filter_size", "pad", "stride", "expected"),
    [
        (700, 20, 0, 2, 341),  # DeepSpeech layer 1, width: (700 - 20) // 2 + 1
        (161, 5, 0, 2, 79),  # its height; layer 2 takes 79x341
        (224, 3, 1, 1, 224),  # "same" 3x3
        (224, 7, 3, 2, 112),  # ResNet stem: (224 + 6 - 7) // 2 + 1 = 112 (floor of 112.5)
        (7, 1, 3, 2, 7),  # a padded 1x1, stride 2: (7 + 6 - 1) // 2 + 1
    ],
)
def test_conv_output_floors_like_cudnn(size, filter_size, pad, stride, expected):
    assert formulas.conv_output(size, filter_size, pad, stride) == expected


def test_conv_flops_match_the_v100_sheet():
    # DeepSpeech conv 1, batch 4: 2·P·Q·N·K·C·R·S = 2·79·341·4·32·1·5·20 = 689,638,400;
    # the sheet's fwd time 0.078 ms gives its 8.84152 TFLOP/s.
    flops = formulas.conv_flops(4, 1, 161, 700, 32, 5, 20, 0, 0, 2, 2)
    assert flops == 689_638_400
    assert formulas.tflops(flops, 0.078e-3) == pytest.approx(8.84152, rel=1e-5)


def test_rnn_counts():
    # vanilla h1760 n16 t50: 2·50·16·1760² + 50·16·1760; sheet: 1.18009 TFLOP/s in 4.201 ms
    vanilla = formulas.rnn_flops("vanilla", 1760, 16, 50)
    assert vanilla == 2 * 50 * 16 * 1760**2 + 50 * 16 * 1760 == 4_957_568_000
    assert formulas.tflops(vanilla, 4.201e-3) == pytest.approx(1.18009, rel=1e-5)
    assert formulas.rnn_flops("lstm", 512, 16, 25) == 8 * 25 * 16 * 512**2
    assert formulas.rnn_flops("gru", 1024, 32, 1500) == 6 * 1500 * 32 * 1024**2
    assert formulas.rnn_fwd_bwd_flops("lstm", 512, 16, 25) == 3 * 8 * 25 * 16 * 512**2
    with pytest.raises(ValueError):
        formulas.rnn_flops("transformer", 1, 1, 1)


def test_rates():
    assert formulas.tflops(3e12, 1.5) == pytest.approx(2.0)
    assert formulas.gbps(1 << 30, 0.02) == pytest.approx(53.687, rel=1e-4)


@pytest.mark.parametrize(("ranks", "factor"), [(2, 1.0), (4, 1.5), (8, 1.75), (16, 1.875)])
def test_busbw_is_algbw_times_2_n_minus_1_over_n(ranks, factor):
    assert formulas.collective_busbw("allreduce", 100.0, ranks) == pytest.approx(100.0 * factor)


def test_busbw_of_one_rank_is_algbw():
    assert formulas.collective_busbw("allreduce", 42.0, 1) == 42.0


def test_scaling_efficiency():
    assert formulas.scaling_efficiency(1734, 219, 8) == pytest.approx(0.9897, rel=1e-3)


def test_median_and_spread_of_a_known_sample():
    sample = [1.0, 2.0, 3.0, 4.0, 100.0]  # deviations from 3: 2, 1, 0, 1, 97 → MAD 1
    assert formulas.median(sample) == 3.0
    assert formulas.spread(sample) == pytest.approx(1.4826)
    assert formulas.median([1.0, 2.0, 3.0, 4.0]) == 2.5
    assert formulas.spread([5.0, 5.0, 5.0]) == 0.0
