"""Kernel timing on a real GPU: every method the suite chooses, padding, the convolution
search, and energy read across the timed work. Skipped without a CUDA GPU in PyTorch.
"""

from __future__ import annotations

import warnings

import pytest

from dltui.bench.backends import load_backend
from dltui.bench.shapes import BandwidthCase, ConvCase, GemmCase, RnnCase
from dltui.bench.suite import _Item, measure
from dltui.plans import formulas
from dltui.protocol.bench_plans import KernelPlan
from dltui.protocol.bench_results import KernelResult

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def backend(gateway):
    """torch is imported here once NVML shows a GPU, not at the module's top, which every
    worker runs as it collects."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    return load_backend("torch", "cuda")


def timed(backend, kind, precision, case, direction="fwd", **plan) -> KernelResult:
    result = measure(
        backend, KernelPlan(device="cuda", **plan), _Item(kind, precision, case, direction)
    )
    assert result.error is None, result.error
    print(
        f"{kind} {result.shape} {direction} {precision}: {result.method} ×{result.per_sample}, "
        f"{result.samples} samples, median {result.median_s * 1e6:.2f} µs ± "
        f"{result.spread_s * 1e6:.2f}, {result.tflops or 0:.1f} TFLOP/s, layout {result.layout}, "
        f"padded {result.padded_shape}, energy {result.energy_j} J over {result.energy_s} s"
    )
    return result


def test_a_small_gemm_is_timed_from_a_cuda_graph_below_the_launch_path(backend):
    result = timed(backend, "gemm", "mixed", GemmCase(512, 32, 512), max_seconds=0.3)
    assert result.method == "graph" and result.per_sample > 100
    assert result.median_s < 8e-6  # a PyTorch launch alone costs ~22 µs here


def test_a_long_gemm_is_one_iteration_a_sample(backend):
    result = timed(backend, "gemm", "bf16", GemmCase(8192, 8192, 8192), max_seconds=1.0)
    assert result.method == "graph" and result.per_sample <= 2  # ~1.4 ms: one or two a sample
    assert result.tflops > 600


def test_padding_makes_an_odd_gemm_run_at_its_neighbours_rate(backend):
    case = GemmCase(4096, 7133, 4096, b_t=True)
    padded = timed(backend, "gemm", "mixed", case, max_seconds=0.5)
    stated = timed(backend, "gemm", "mixed", case, max_seconds=0.5, pad=False)
    assert padded.padded_shape == "4096x7136x4096 NT" and stated.padded_shape is None
    assert padded.median_s < 0.5 * stated.median_s  # 319 µs against 1,638 (issue #17)


def test_energy_from_a_sustained_run_gives_a_believable_per_watt(backend, gateway):
    limit = gateway.readers[0].read_slow(["power_limit"])["power_limit"]
    case = GemmCase(4096, 4096, 4096)
    # Random values, as `--energy` defaults to: zeros draw less (1.9 TFLOP/s/W seen on them).
    result = timed(backend, "gemm", "bf16", case, max_seconds=2.0, energy=True, fill="random")
    assert result.energy_s >= formulas.MIN_ENERGY_WINDOW_S
    watts = formulas.watts(result.energy_j, result.energy_s)
    sustained = formulas.tflops(case.flops, result.sustained_s)
    print(f"{watts:.0f} W, sustained {sustained:.0f} TFLOP/s against {result.tflops:.0f} burst")
    # The cap holds over seconds, not over a run's first two from idle: an H100 (700 W) read
    # 757-775 W over them (NVML's instant power peaks at 787 W), and 690-706 W once steady,
    # as NVML's own average (698 W). A unit or a window wrong would be off by far more.
    assert 150 < watts < 1.15 * limit
    assert 0.3 < sustained / watts < 1.6  # the H200 peaks near 1.4 TFLOP/s/W
    assert sustained <= result.tflops * 1.05  # a power cap lowers the sustained rate
    again = timed(backend, "gemm", "bf16", case, max_seconds=2.0, fill="random")
    assert again.energy_j is None
    # The next case does not start throttled: faster than the sustained run where the cap
    # slowed it (the H200), at the burst's pace where it did not (an H100 holds this GEMM).
    assert again.median_s < max(result.sustained_s, result.median_s * 1.03)


def test_deepbenchs_sixteen_bit_inputs_run_faster_than_random_ones(backend):
    """DeepBench's half-precision inputs are all zero; a power-capped GPU runs those faster."""
    case = GemmCase(1024, 48000, 2560, a_t=True)
    random = timed(backend, "gemm", "mixed", case, max_seconds=1.0, fill="random")
    deepbench = timed(backend, "gemm", "mixed", case, max_seconds=1.0)
    assert deepbench.fill == "deepbench" and random.fill == "random"
    assert deepbench.median_s < random.median_s


@pytest.mark.parametrize("direction", ["fwd", "bwd_data", "bwd_weights"])
def test_convolution_passes_search_layouts_and_capture(backend, direction):
    case = ConvCase(16, 64, 56, 56, 64, 3, 3, 1, 1)
    result = timed(backend, "conv", "bf16", case, direction, max_seconds=0.3)
    assert result.layout in ("nchw", "nhwc") and result.method == "graph"
    default = timed(backend, "conv", "bf16", case, direction, max_seconds=0.3, tuning="default")
    assert default.layout == "nchw" and default.tuning == "default"
    assert result.median_s < default.median_s * 1.05  # the search never loses to the default


@pytest.mark.parametrize("direction", ["fwd", "fwd+bwd"])
def test_rnns_run_through_cudnn_and_are_timed(backend, direction):
    with warnings.catch_warnings():
        # cuDNN's warning that it copies the weights into one buffer before every call
        warnings.filterwarnings("error", message=".*single contiguous chunk of memory")
        result = timed(
            backend, "rnn", "mixed", RnnCase("lstm", 512, 16, 25), direction, max_seconds=0.3
        )
    assert result.method == "graph"  # the host's per-step launches are no part of the figure


def test_copies_capture_where_they_can_and_batch_where_they_cannot(backend):
    pinned = timed(backend, "bandwidth", "", BandwidthCase("h2d", 1 << 20, pinned=True), "h2d",
                   max_seconds=0.3)  # fmt: skip
    pageable = timed(backend, "bandwidth", "", BandwidthCase("h2d", 1 << 20), "h2d",
                     max_seconds=0.3)  # fmt: skip
    assert pinned.gbps > 20 and pageable.gbps > 1
    assert pinned.method == "graph" and pageable.method in ("batch", "each")
