"""Published figures, so every result says how this machine compares.

Kernels: DeepBench's training results on one V100 in a DGX-1 (bench/data/
deepbench_v100_train.csv). Precision: our fp16, bf16 and mixed compare with their "mixed" rows
(16-bit inputs, 32-bit accumulation; the V100 has no bf16), our fp32 and tf32 with their
"fp32" rows (the V100 has no TF32, so tf32's ratio shows what TF32 buys over plain fp32).

Training: tf_cnn_benchmarks' published images/s on 1–8 P100s of a DGX-1 (bench/data/
tf_cnn_benchmarks_published.csv; synthetic data, fp32, its default batch): the era and the
systems the scale-up vs scale-out whitepaper measured.

Transformers, on an H100 SXM (the H200's compute): attention against FlashAttention-3's
forward figures and FlashAttention-2's forward+backward (Shah et al., "FlashAttention-3",
2024, figures read from its charts: 16k tokens a batch, 2,048 wide, fp16), and a GPT run's
MFU beside torchtitan's (Llama 3 8B on 8× H100) and Megatron-LM's (GPT 2B–462B on H100).
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from dltui.bench.shapes import AttentionCase, Case, GemmCase, case_from_row, read_data_csv
from dltui.plans import formulas

REFERENCE_GPU = "V100"
_SHEET_PRECISION = {
    "fp32": "fp32",
    "tf32": "fp32",
    "fp16": "mixed",
    "bf16": "mixed",
    "mixed": "mixed",
}
_MISTYPED_K = (1530, 1536)
"""The sheets say k=1530 for 8 GEMMs that gemm_problems.h lists with k=1536 (see the data
README): rows with 1530 are filed under 1536, their rate recomputed from the time."""

# (rate column, time column) per direction; a rate of None: the sheet has only a time.
_COLUMNS = {
    ("gemm", "fwd"): ("tflops", "time_ms"),
    ("conv", "fwd"): ("tflops_fwd", "fwd_ms"),
    ("conv", "bwd_data"): ("tflops_bwd_data", "bwd_data_ms"),
    ("conv", "bwd_weights"): ("tflops_bwd_weights", "bwd_weights_ms"),
    ("rnn", "fwd"): ("tflops_fwd", "fwd_ms"),
    ("rnn", "fwd+bwd"): (None, "time_ms"),
}


class Reference(NamedTuple):
    tflops: float | None
    """The sheet's rate for this pass, TFLOP/s; None where it gives only a time."""
    ms: float | None


def _number(text: str) -> float | None:
    return float(text) if text else None


def _filed(row: dict[str, str]) -> tuple[Case, dict[str, str]]:
    case = case_from_row(row)
    if isinstance(case, GemmCase) and case.k == _MISTYPED_K[0]:
        case = GemmCase(case.m, case.n, _MISTYPED_K[1], case.a_t, case.b_t)
        rate = formulas.tflops(case.flops, float(row["time_ms"]) / 1e3)
        row = row | {"tflops": f"{rate:.6g}"}
    return case, row


@cache
def _index() -> dict[tuple[str, Case], dict[str, str]]:
    """(sheet precision, case) → row; the first row wins where DeepBench lists a shape twice."""
    index: dict[tuple[str, Case], dict[str, str]] = {}
    for row in read_data_csv("deepbench_v100_train.csv"):
        if row["kind"] in ("gemm", "conv", "rnn"):
            case, row = _filed(row)
            index.setdefault((row["precision"], case), row)
    return index


ATTENTION_GPU = "H100 SXM (FlashAttention-3 paper)"
_ATTENTION = {
    ("fwd", False, 512): 467.0, ("fwd", False, 2048): 625.0, ("fwd", False, 4096): 638.0,
    ("fwd", False, 8192): 646.0, ("fwd", False, 16_384): 648.0, ("fwd", True, 4096): 579.0,
    ("fwd+bwd", False, 4096): 326.0, ("fwd+bwd", False, 16_384): 338.0,
}  # fmt: skip
"""TFLOP/s at head dimension 128 by (pass, causal, sequence): FlashAttention-3's forward,
FlashAttention-2's forward+backward (the paper's H100 baseline), 16k tokens a batch."""


def reference_gpu(kind: str) -> str:
    """Whose figures a kind's reference ratio is against."""
    return ATTENTION_GPU if kind == "attention" else REFERENCE_GPU


def _attention(case: AttentionCase, precision: str, direction: str) -> Reference | None:
    if precision not in ("fp16", "bf16") or case.head_dim != 128:
        return None
    if case.batch * case.seq != 16_384 or case.heads * case.head_dim != 2048:
        return None  # the paper's batches only
    found = _ATTENTION.get((direction, case.causal, case.seq))
    return Reference(found, None) if found is not None else None


def lookup(kind: str, case: Case, precision: str, direction: str) -> Reference | None:
    """The V100's figure for this case, pass and precision (attention: the H100's); None
    where the sheet has none."""
    if isinstance(case, AttentionCase):
        return _attention(case, precision, direction)
    columns = _COLUMNS.get((kind, direction))
    sheet_precision = _SHEET_PRECISION.get(precision)
    if columns is None or sheet_precision is None:
        return None
    row = _index().get((sheet_precision, case))
    if row is None:
        return None
    rate_column, time_column = columns
    found = Reference(_number(row[rate_column]) if rate_column else None, _number(row[time_column]))
    return None if found == (None, None) else found


def ratio(reference: Reference, tflops: float | None, seconds: float) -> float | None:
    """Ours over theirs, so above 1 is faster: rates where both have one, else the reference's
    time over ours."""
    if reference.tflops and tflops is not None:
        return tflops / reference.tflops
    if reference.ms and seconds > 0:
        return reference.ms / 1e3 / seconds
    return None


class PublishedTraining(NamedTuple):
    label: str
    images_per_s: float


_TRAINING_NAMES = {"ResNet-50": "resnet50", "VGG16": "vgg16", "AlexNet": "alexnet"}
_TRAINING_BATCH = {"resnet50": "64", "vgg16": "64", "alexnet": "512"}


@cache
def _training_index() -> dict[tuple[str, int], PublishedTraining]:
    index = {}
    for row in read_data_csv("tf_cnn_benchmarks_published.csv"):
        model = _TRAINING_NAMES.get(row["model"])
        if (model and row["data"] == "synthetic" and row["images_per_sec"]
                and row["batch_per_gpu"] == _TRAINING_BATCH[model]):  # fmt: skip
            gpus = int(row["gpus"])
            label = f"tf_cnn_benchmarks, {gpus}× {row['gpu']}, fp32, batch {row['batch_per_gpu']}"
            index[(model, gpus)] = PublishedTraining(label, float(row["images_per_sec"]))
    return index


def published_training(model: str, gpus: int, servers: int) -> PublishedTraining | None:
    """tf_cnn_benchmarks' figure for this model on as many GPUs of one server; None where it
    published none (GoogLeNet, more than 8 GPUs, several servers)."""
    return _training_index().get((model, gpus)) if servers == 1 else None


PUBLISHED_MFU = (
    "torchtitan: Llama 3 8B, 8× H100, bf16, FSDP: 33–39% MFU",
    "Megatron-LM: GPT 2B–462B on H100: up to 47% MFU",
)
"""What a GPT run's MFU compares with: no other stack reports the same model on the same GPU,
so these are anchors, not ratios (pytorch/torchtitan's benchmarks; NVIDIA/Megatron-LM)."""


def published_mfu() -> str:
    return "; ".join(PUBLISHED_MFU)
