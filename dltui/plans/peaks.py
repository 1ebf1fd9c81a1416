"""GPUs' dense 16-bit tensor peaks, the denominator of MFU (model FLOPs utilisation).

Dense, never the 2:4-sparsity figure printed beside it (1,979 TFLOP/s on an H100 SXM): tools
that divided by the sparse figure, or by another GPU's, reported nonsense, some over 100%. A
GPU not in the table gets no MFU at all rather than a guess. Figures are the vendor
datasheets' bf16/fp16 tensor-core peaks without sparsity, at boost clock.
"""

from __future__ import annotations

PEAKS: tuple[tuple[str, tuple[str, ...], float], ...] = (
    ("H200 NVL", ("H200 NVL",), 835.0),
    ("H200 SXM", ("H200",), 989.0),
    ("GH200", ("GH200",), 989.0),
    ("H100 NVL", ("H100 NVL",), 835.0),
    ("H100 PCIe", ("H100 PCIE",), 756.0),
    ("H100 SXM", ("H100 80GB HBM3", "H100 SXM"), 989.0),
    ("A100", ("A100",), 312.0),
    ("L40S", ("L40S",), 362.0),
)
"""(label, what the CUDA or NVML name contains, upper-case, TFLOP/s), most specific first: an
"NVIDIA H200 NVL" must not be read as an H200 SXM."""


def dense_16bit_peak(gpu_name: str) -> tuple[str, float] | None:
    """The GPU's label and dense bf16 peak in TFLOP/s, from the name CUDA or NVML gives
    ("NVIDIA H200", "NVIDIA H100 80GB HBM3"); None for a GPU not in the table."""
    name = gpu_name.upper()
    for label, patterns, peak in PEAKS:
        if any(pattern in name for pattern in patterns):
            return label, peak
    return None


def mfu(
    flops_per_token: float, tokens_per_s: float, gpus: int, peak_tflops: float | None
) -> float | None:
    """Model FLOPs utilisation: the FLOPs the model's tokens need per second, over the peak of
    the GPUs that ran them. None without a peak (an unknown GPU, a CPU)."""
    if peak_tflops is None or peak_tflops <= 0 or gpus < 1:
        return None
    return flops_per_token * tokens_per_s / (gpus * peak_tflops * 1e12)
