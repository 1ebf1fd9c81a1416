"""Run a kernel plan: every case of every kind and precision, one KernelResult per pass.

The worker calls `run_plan` and turns the callbacks into frames. A case that fails (out of
memory, a precision the device lacks) becomes a result with an error and the suite goes on:
one bad case must not cost the rest of an hour-long run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dltui.bench import reference
from dltui.bench.backends import Backend, Settings, budget_for, error_text, load_backend
from dltui.bench.padding import padded
from dltui.bench.shapes import AttentionCase, BandwidthCase, Case, ComputeCase, RnnCase, cases
from dltui.plans import formulas
from dltui.plans.names import COLLECTIVES
from dltui.protocol.bench_plans import KernelPlan
from dltui.protocol.bench_results import KernelResult

DIRECTIONS = {
    "gemm": ("fwd",),
    "conv": ("fwd", "bwd_data", "bwd_weights"),
    "rnn": ("fwd", "fwd+bwd"),
    "attention": ("fwd", "fwd+bwd"),
}
COLLECTIVES_WORK = "collectives"
"""The plan's collectives, run as one piece of its work."""
BYTES = ""
"""The precision of a bandwidth result: copies move bytes, so none applies."""


@dataclass(frozen=True, slots=True)
class _Item:
    """One result to produce: a case, one of its passes, one precision."""

    kind: str
    precision: str
    case: Case
    direction: str

    @property
    def label(self) -> str:
        words = [self.kind, self.precision, self.case.label]
        if self.kind in DIRECTIONS:
            words.append(self.direction)
        return " ".join(word for word in words if word)


def _items(plan: KernelPlan, kind: str, gpus: int) -> list[_Item]:
    """Bandwidth once (bytes have no precision); compute kinds once per precision."""
    if kind == "bandwidth":
        return [
            _Item(kind, BYTES, case, case.direction)
            for case in cases(plan.shape_set, kind, gpus)
            if isinstance(case, BandwidthCase)
        ]
    return [
        _Item(kind, precision, case, direction)
        for precision in plan.precisions
        for case in cases(plan.shape_set, kind)
        for direction in DIRECTIONS[kind]
    ]


def run_plan(
    plan: KernelPlan,
    on_result: Callable[[KernelResult], None],
    on_progress: Callable[[int, int, str], None],
    should_stop: Callable[[], bool] = lambda: False,
) -> None:
    """Run the plan's kinds in its order. on_progress(done, total, label) comes before each
    result (and once at the end); should_stop is asked before each, and ends the run early."""
    backend = None
    if any(kind not in COLLECTIVES for kind in plan.kinds):
        backend = load_backend(plan.framework, plan.device)  # the framework loads here
    gpus = backend.gpu_count if backend else 0
    # The collectives run together, where the first of them is in the plan: one group of
    # ranks for all of them (meeting the peers costs seconds; a collective, milliseconds).
    together = [(kind, case) for kind in plan.kinds if kind in COLLECTIVES
                for case in cases(plan.shape_set, kind)]  # fmt: skip
    work: list[tuple[str, list[Any]]] = []
    for kind in plan.kinds:
        if kind not in COLLECTIVES:
            work.append((kind, _items(plan, kind, gpus)))
        elif not any(name == COLLECTIVES_WORK for name, _ in work):
            work.append((COLLECTIVES_WORK, together))
    total = sum(len(items) for _, items in work)
    done = 0
    for kind, items in work:
        if should_stop():
            return
        if kind == COLLECTIVES_WORK:
            # Their own module, loaded only when asked for.
            from dltui.bench.kernels.allreduce import run_allreduce

            offset = done

            def progress(step: int, _total: int, label: str, offset: int = offset) -> None:
                on_progress(offset + step, total, label)

            ops = [op for op, _ in items]
            run_allreduce(plan, [case for _, case in items], on_result, progress, should_stop,
                          ops)  # fmt: skip
            done += len(items)
            continue
        assert backend is not None
        for item in items:
            if should_stop():
                return
            on_progress(done, total, item.label)
            result = measure(backend, plan, item)
            if isinstance(item.case, BandwidthCase) and backend.gpu_uuids:
                # The link a copy crossed, in NVML's numbering (read once per worker).
                from dltui.bench.placement import copy_link, nvml_indices

                result = copy_link(result, item.case, nvml_indices(backend.gpu_uuids))
            on_result(result)
            done += 1
    on_progress(total, total, "done")


def measure(backend: Backend, plan: KernelPlan, item: _Item) -> KernelResult:
    """Time one item and turn its times into a result, or its failure into an error result.

    The case is padded first where the plan pads (16-bit GEMMs and convolutions); rates count
    the case as stated, as DeepBench's do. A reference ratio is given only where the run is
    set up as DeepBench's was (padded, searched), so it compares like with like."""
    timed = padded(item.case, item.precision) if plan.pad else item.case
    compute = isinstance(item.case, ComputeCase)
    fields: dict[str, Any] = {
        "kind": item.kind,
        "framework": plan.framework,
        "device": backend.device,
        "precision": item.precision,
        "direction": item.direction,
        "shape": item.case.label,
        "params": item.case.params,
        "padded_shape": timed.label if timed != item.case else None,
        "tuning": plan.tuning if compute else None,
        "fill": plan.fill if compute and item.kind != "attention" else "random",
    }
    budget = budget_for(plan, item.kind, on_gpu=backend.device != "cpu")
    try:
        settings = Settings(item.precision, plan.tuning, plan.fill, budget)
        found = backend.time_case(timed, item.direction, settings)
    except Exception as exc:  # frameworks raise many types (OOM, dtype, cuDNN): record, go on
        return KernelResult(**fields, error=error_text(exc))
    times, energy = found.timing.samples, found.timing.energy
    median = formulas.median(times)
    flops = _flops(item)
    rate = formulas.tflops(flops, median) if flops is not None else None
    nbytes = item.case.nbytes if isinstance(item.case, BandwidthCase) else None
    like_deepbench = plan.pad and plan.tuning == "searched"
    ref = reference.lookup(item.kind, item.case, item.precision, item.direction)
    ref = ref if like_deepbench else None
    return KernelResult(
        **fields,
        iterations=found.timing.iterations,
        median_s=median,
        spread_s=formulas.spread(times),
        min_s=min(times),
        tflops=rate,
        gbps=formulas.gbps(nbytes, median) if nbytes is not None else None,
        reference_gpu=reference.reference_gpu(item.kind) if ref else None,
        reference_tflops=ref.tflops if ref else None,
        reference_ms=ref.ms if ref else None,
        ratio=reference.ratio(ref, rate, median) if ref else None,
        method=found.timing.method,
        samples=len(times),
        per_sample=found.timing.per_sample,
        layout=found.layout,
        backend=found.backend,
        energy_j=energy.joules if energy else None,
        energy_s=energy.seconds if energy else None,
        sustained_s=energy.seconds_per_iteration if energy else None,
    )


def _flops(item: _Item) -> float | None:
    """DeepBench's count for the pass; fwd+bwd of an RNN is three passes; attention's as
    FlashAttention counts it."""
    case = item.case
    if isinstance(case, RnnCase) and item.direction == "fwd+bwd":
        return formulas.rnn_fwd_bwd_flops(case.cell, case.hidden, case.batch, case.steps)
    if isinstance(case, AttentionCase):
        return formulas.attention_flops(
            case.batch, case.heads, case.seq, case.head_dim, case.causal, item.direction
        )
    if isinstance(case, ComputeCase):
        return case.flops
    return None
