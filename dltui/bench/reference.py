"""Published figures, so every result says how this machine compares.

Kernels: DeepBench's training results on one V100 in a DGX-1 (bench/data/
deepbench_v100_train.csv). Precision: our fp16, bf16 and mixed compare with their "mixed" rows
(16-bit inputs, 32-bit accumulation; the V100 has no bf16), our fp32 and tf32 with their
"fp32" rows (the V100 has no TF32, so tf32's ratio shows what TF32 buys over plain fp32).

Training: tf_cnn_benchmarks' published images/s on 1–8 P100s of a DGX-1 (bench/data/
tf_cnn_benchmarks_published.csv; synthetic data, fp32, its default batch): the era and the
systems the scale-up vs scale-out whitepaper measured.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from dltui.bench.shapes import Case, GemmCase, case_from_row, read_data_csv
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


def lookup(kind: str, case: Case, precision: str, direction: str) -> Reference | None:
    """The V100's figure for this case, pass and precision; None where the sheet has none."""
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
