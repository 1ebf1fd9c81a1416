"""Pass/fail checks on benchmark results: a plan as an acceptance test a new server must pass
before it joins a fleet.

    ratio>=0.9                                 every case against its reference (or a baseline)
    tflops>=600 kind=gemm precision=bf16       every bf16 GEMM case
    images_per_second>=7000 model=resnet50     every ResNet-50 run
    mfu>=0.6 model=gpt-1.3b                    every GPT 1.3B run (tokens_per_second too)
    efficiency>=0.9                            scaling (training), or of the link (copies)

An assertion is a figure, a comparison, a number and filters (`key=value`, all must match).
Every result it matches must pass; a matched case that failed (an error) fails it, and an
assertion that matches nothing fails too (an acceptance test that measured nothing did not
pass). A result without the figure (TFLOP/s of a copy) is not matched. `dltui bench --assert`
and a plan file's [assert] table take them; each failure is one line naming the case and its
figure, and the command exits 5 (commands/exit_status.py).
"""

from __future__ import annotations

import json
import math
import operator
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from dltui.plans.check import PlanError
from dltui.plans.names import FRAMEWORKS, KINDS, MODELS, PRECISIONS
from dltui.plans.scaling import scaling, throughput
from dltui.plans.threshold import NUMBER_CHARS, threshold
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.protocol.errors import ProtocolError, quote
from dltui.protocol.validate import build
from dltui.userfiles import FileProblem, name_of, read_bounded

MAX_ASSERTIONS = 256
MAX_BASELINE_BYTES = 64 << 20

_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, "==": operator.eq, ">": operator.gt, "<": operator.lt,
}  # fmt: skip
# Figure -> its unit in words; the aliases a user may write.
KERNEL_FIGURES = {"tflops": "TFLOP/s", "gbps": "GB/s", "busbw_gbps": "GB/s", "ratio": "×",
                  "efficiency": "of the link", "median_ms": "ms"}  # fmt: skip
MODEL_FIGURES = {"images_per_second": "images/s", "tokens_per_second": "tokens/s",
                 "mfu": "of the dense peak", "ratio": "×", "efficiency": "of ideal",
                 "accuracy": "top-1", "time_to_accuracy_s": "s"}  # fmt: skip
ALIASES = {"images_per_s": "images_per_second", "tokens_per_s": "tokens_per_second"}
KERNEL_FILTERS = ("kind", "precision", "direction", "shape", "framework", "device", "server")
MODEL_FILTERS = ("model", "precision", "gpus", "servers", "batch", "framework", "device",
                 "server")  # fmt: skip
KNOWN_VALUES = {"kind": KINDS, "precision": PRECISIONS, "framework": FRAMEWORKS, "model": MODELS}
"""Filter values a result can have, checked as the assertion is read: a typo ('gemmm') would
otherwise match nothing, and fail only once the whole run has run."""
_EXPRESSION = re.compile(rf"^\s*([a-z_]+)\s*(>=|<=|==|>|<)\s*({NUMBER_CHARS})((?:\s+\S+)*)\s*$")


class AssertionSyntaxError(ValueError):
    """An assertion that does not parse, in one line."""


@dataclass(frozen=True)
class Assertion:
    text: str
    figure: str
    compare: Callable[[float, float], bool]
    threshold: float
    filters: dict[str, str] = field(default_factory=dict)
    name: str | None = None
    """A plan file's name for it."""

    @property
    def label(self) -> str:
        return f"{self.name} ({self.text})" if self.name else self.text


def parse_assertion(text: str, name: str | None = None) -> Assertion:
    match = _EXPRESSION.match(text)
    if match is None:
        raise AssertionSyntaxError(f'{quote(text)} is not "FIGURE OP NUMBER [key=value ...]" '
                                   "(e.g. tflops>=600 kind=gemm precision=bf16)")  # fmt: skip
    figure, op, number, rest = match.groups()
    figure = ALIASES.get(figure, figure)
    if figure not in KERNEL_FIGURES and figure not in MODEL_FIGURES:
        known = sorted({*KERNEL_FIGURES, *MODEL_FIGURES})
        raise AssertionSyntaxError(f"unknown figure {quote(figure)} (one of: {', '.join(known)})")
    try:
        limit = threshold(number)
    except ValueError as exc:
        raise AssertionSyntaxError(f"{quote(text)}: {exc}") from None
    filters = {}
    for word in rest.split():
        key, sep, value = word.partition("=")
        if not sep or not value:
            raise AssertionSyntaxError(f"{quote(text)}: {quote(word)} is not key=value")
        if key not in KERNEL_FILTERS and key not in MODEL_FILTERS:
            known = sorted({*KERNEL_FILTERS, *MODEL_FILTERS})
            raise AssertionSyntaxError(f"{quote(text)}: unknown key {quote(key)} (one of: "
                                       f"{', '.join(known)})")  # fmt: skip
        if key in filters:
            raise AssertionSyntaxError(f"{quote(text)}: {key} given twice (one value a key)")
        if value not in KNOWN_VALUES.get(key, (value,)):
            raise AssertionSyntaxError(f"{quote(text)}: unknown {key} {quote(value)} (one of: "
                                       f"{', '.join(KNOWN_VALUES[key])})")  # fmt: skip
        filters[key] = value
    # A figure of one kind of result, filtered by a key only the other kind has, matches nothing.
    shared = figure in KERNEL_FIGURES and figure in MODEL_FIGURES  # ratio, efficiency
    kind = "kernel" if figure not in MODEL_FIGURES else "training"
    stray = [
        key for key in filters if key not in (KERNEL_FILTERS if kind == "kernel" else MODEL_FILTERS)
    ]
    if stray and not shared:
        raise AssertionSyntaxError(f"{quote(text)}: {figure} is a {kind} result's figure, and "
                                   f"no {kind} result has a {stray[0]}")  # fmt: skip
    return Assertion(" ".join(text.split()), figure, _OPERATORS[op], limit, filters, name)


def parse_table(table: object) -> list[Assertion]:
    """A plan file's [assert] table: name = "expression"."""
    if not isinstance(table, dict):
        raise AssertionSyntaxError('[assert] must be a table of name = "expression"')
    if len(table) > MAX_ASSERTIONS:
        raise AssertionSyntaxError(f"[assert]: at most {MAX_ASSERTIONS}, got {len(table)}")
    found = []
    for name, text in table.items():
        if not isinstance(text, str):
            raise AssertionSyntaxError(f"[assert] {name}: expected a string, got {quote(text)}")
        try:
            found.append(parse_assertion(text, name))
        except AssertionSyntaxError as exc:
            raise AssertionSyntaxError(f"[assert] {name}: {exc}") from None
    return found


@dataclass(frozen=True)
class Case:
    """One result as assertions see it: its words, its figures, what filters match."""

    words: str
    figures: dict[str, float | None]
    units: dict[str, str]
    keys: dict[str, str]
    error: str | None = None
    absent: dict[str, str] = field(default_factory=dict)
    """Figures a check asked for that this case cannot have, and why (a case the chosen
    baseline lacks): a failure, never a case passed over."""


NOT_IN_BASELINE = "not in the baseline"

Baseline = dict[tuple[object, ...], float]
"""A chosen baseline's rate per case (kernel_key, model_key): what `ratio` is measured against
instead of the published figure."""


def kernel_key(result: KernelResult) -> tuple[object, ...]:
    return ("kernel", result.kind, result.precision, result.direction, result.shape)


def model_key(result: ModelResult) -> tuple[object, ...]:
    """A training run's case: what it trains, on how much (not how: compiled or not, which
    framework, are what a ratio against a baseline may compare)."""
    return ("model", result.model, result.precision, result.gpus, result.servers, result.batch,
            result.image_size, result.seq_len)  # fmt: skip


def kernel_rate(result: KernelResult) -> float | None:
    """The rate a ratio compares: TFLOP/s, else GB/s, else iterations per second."""
    if result.tflops is not None:
        return result.tflops
    if result.gbps is not None:
        return result.gbps
    return 1 / result.median_s if result.median_s else None


def case_key(result: KernelResult | ModelResult) -> tuple[object, ...]:
    return kernel_key(result) if isinstance(result, KernelResult) else model_key(result)


def ratio_to_baseline(result: KernelResult | ModelResult, baseline: Baseline) -> float | None:
    """The result's rate over the baseline's for the same case, what `ratio` is against a
    chosen baseline; None where either has no rate (`case_key(result) in baseline` tells a
    case the baseline lacks)."""
    base = baseline.get(case_key(result))
    rate = kernel_rate(result) if isinstance(result, KernelResult) else throughput(result) or None
    return rate / base if base and rate is not None else None


def cases(
    kernels: Sequence[tuple[str, KernelResult]],
    models: Sequence[tuple[str, ModelResult]],
    baseline: Baseline | None = None,
) -> list[Case]:
    """(server, result) pairs as cases; `baseline` replaces the published figures in ratios."""
    found = [_kernel_case(server, result, baseline) for server, result in kernels]
    for (server, result), scaled in zip(models, scaling(models), strict=True):
        efficiency = scaled.vs_one_server if result.servers > 1 else scaled.vs_one_gpu
        found.append(_model_case(server, result, efficiency, baseline))
    return found


def _kernel_case(server: str, result: KernelResult, baseline: Baseline | None) -> Case:
    ratio = result.ratio
    absent = {}
    if baseline is not None:
        ratio = ratio_to_baseline(result, baseline)
        if kernel_key(result) not in baseline:
            absent["ratio"] = NOT_IN_BASELINE
    efficiency = (result.gbps / result.nominal_gbps
                  if result.gbps is not None and result.nominal_gbps else None)  # fmt: skip
    figures = {"tflops": result.tflops, "gbps": result.gbps, "busbw_gbps": result.busbw_gbps,
               "ratio": ratio, "efficiency": efficiency,
               "median_ms": result.median_s * 1000 if result.median_s else None}  # fmt: skip
    keys = {"kind": result.kind, "precision": result.precision, "direction": result.direction,
            "shape": result.shape, "framework": result.framework, "device": result.device,
            "server": server}  # fmt: skip
    words = f"{server}: {result.kind} {result.shape} {result.direction} {result.precision}"
    return Case(words, figures, KERNEL_FIGURES, keys, result.error, absent)


def _model_case(
    server: str, result: ModelResult, efficiency: float | None, baseline: Baseline | None
) -> Case:
    reference, rate = result.reference_images_per_s, throughput(result)
    ratio = rate / reference if rate and reference else None
    absent = {}
    if baseline is not None:
        ratio = ratio_to_baseline(result, baseline)
        if model_key(result) not in baseline:
            absent["ratio"] = NOT_IN_BASELINE
    figures = {"images_per_second": result.images_per_s, "tokens_per_second": result.tokens_per_s,
               "mfu": result.mfu, "ratio": ratio,
               "efficiency": efficiency, "accuracy": result.accuracy,
               "time_to_accuracy_s": result.time_to_accuracy_s}  # fmt: skip
    keys = {"model": result.model, "precision": result.precision, "gpus": str(result.gpus),
            "servers": str(result.servers), "batch": str(result.batch),
            "framework": result.framework, "device": result.device, "server": server}  # fmt: skip
    unit = "GPU" if result.device == "cuda" else "proc"
    words = (f"{server}: {result.model} ×{result.gpus} {unit} {result.precision} "
             f"batch {result.batch}")  # fmt: skip
    return Case(words, figures, MODEL_FIGURES, keys, result.error, absent)


def failures(assertions: Sequence[Assertion], found: Sequence[Case]) -> list[str]:
    """One line per failed check: the assertion, the case and its figure."""
    lines = []
    for assertion in assertions:
        matched = [case for case in found if _matches(assertion, case)]
        if not matched:
            lines.append(f"FAIL {assertion.label}: no result matched")
        for case in matched:
            if case.error is not None:
                lines.append(f"FAIL {assertion.label}: {case.words} failed: {case.error}")
                continue
            value = case.figures[assertion.figure]
            if value is None:  # matched only where it has the figure, or says why not
                lines.append(f"FAIL {assertion.label}: {case.words}: "
                             f"{case.absent[assertion.figure]}")  # fmt: skip
                continue
            if not assertion.compare(value, assertion.threshold):
                unit = case.units[assertion.figure]
                lines.append(f"FAIL {assertion.label}: {case.words}: {value:.4g} {unit}")
    return lines


def _matches(assertion: Assertion, case: Case) -> bool:
    if assertion.figure not in case.figures:
        return False
    no_figure = case.error is None and case.figures[assertion.figure] is None
    if no_figure and assertion.figure not in case.absent:
        return False
    return all(_same(key, case.keys.get(key), value) for key, value in assertion.filters.items())


def _same(key: str, found: str | None, wanted: str) -> bool:
    """A filter's match; a shape matches by its dimensions alone too ("shape=4096x4096x4096")."""
    if found is None:
        return False
    return found == wanted or (key == "shape" and found.split()[0] == wanted)


Results = tuple[list[tuple[str, KernelResult]], list[tuple[str, ModelResult]]]
"""(server, result) pairs: kernel results, then training results, each in the file's order."""


def bench_results(path: str | os.PathLike[str], what: str = "results") -> Results:
    """The (server, result) pairs of a `dltui bench --json` file; PlanError says why a file
    cannot be read as one."""
    try:
        document = json.loads(read_bounded(path, what, MAX_BASELINE_BYTES))
        kernels = [(str(row.get("server", "")), build(KernelResult, row, f"{what} result"))
                   for row in document["results"]]  # fmt: skip
        models = [(str(row.get("server", "")), build(ModelResult, row, f"{what} model"))
                  for row in document["models"]]  # fmt: skip
    except FileProblem as exc:
        raise PlanError(str(exc)) from None
    except (ValueError, KeyError, TypeError, AttributeError, ProtocolError, RecursionError) as exc:
        raise PlanError(f"{what} {name_of(path)}: not a dltui bench --json file ({exc})") from None
    return kernels, models


def baseline_of(results: Results, path: str | os.PathLike[str]) -> Baseline:
    """The rates of a file's results (a `dltui bench --json` file or a recording), for ratios
    against a chosen baseline; PlanError says why they cannot be one."""
    pairs, model_pairs = results
    servers = sorted({server for server, _ in [*pairs, *model_pairs] if server})
    if len(servers) > 1:  # one case's figure from each: which would a ratio be against?
        raise PlanError(f"baseline {name_of(path)} holds results of {len(servers)} servers "
                        f"({', '.join(servers)}): a baseline is one server's (bench --agent "
                        "ONE)")  # fmt: skip
    kernels = [result for _, result in pairs]
    models = [result for _, result in model_pairs]
    found: Baseline = {}
    for result in kernels:
        if (rate := kernel_rate(result)) is not None and result.error is None:
            found[kernel_key(result)] = _a_rate(rate, path, f"{result.kind} {result.shape}")
    for model in models:
        if (rate := throughput(model)) and model.error is None:
            found[model_key(model)] = _a_rate(rate, path, model.model)
    return found


def _a_rate(rate: float, path: str | os.PathLike[str], case: str) -> float:
    """A baseline's rate that a ratio can divide by; PlanError for one no run could give."""
    if not 0 < rate < math.inf:
        raise PlanError(
            f"baseline {name_of(path)}: {case}'s rate {rate!r} is not a positive number"
        )
    return rate
