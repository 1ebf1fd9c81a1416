"""What one GPU does in a training step, as the predictor needs it: the step's compute time,
each gradient's size and when backward makes it ready, and how the framework all-reduces them.

From a measured result's step profile (the times scaled to its own timed step), or assumed
for a described server: gradients evenly over a backward pass that takes two thirds of the step
(backward does twice forward's work), which the prediction then says.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from dltui.formatting import fmt_bytes, fmt_ms
from dltui.plans.names import DDP_BUCKET_BYTES, DDP_FIRST_BUCKET_BYTES
from dltui.protocol.bench_results import ModelResult, StepProfile

MEASURED = "measured"
"""Each gradient's ready time was measured (a hook per gradient)."""
ASSUMED = "assumed"
"""Ready times assumed: the gradients evenly over backward."""
AFTER_BACKWARD = "after backward"
"""The framework all-reduces only once backward is done: nothing overlaps."""

ASSUMED_PIECES = 64
"""A described model's gradient, cut into this many equal pieces over backward."""


@dataclass(frozen=True, slots=True)
class Workload:
    model: str
    batch: int
    """Images per GPU per step."""
    step_s: float
    """One GPU's step with no one to talk to."""
    backward_end_s: float
    """When the last gradient is ready; the optimizer's part of the step follows."""
    gradient_bytes: tuple[int, ...]
    ready_s: tuple[float, ...]
    """When each gradient is ready, in the order backward makes them."""
    bucket_bytes: int
    first_bucket_bytes: int
    overlap: bool
    timing: str
    """MEASURED, ASSUMED or AFTER_BACKWARD."""
    source: str
    """What it came from, in words."""
    overhead_s: float = 0.0
    """What the data-parallel wrapper adds to each step on more than one GPU, measured."""
    step_ratios: tuple[float, ...] = ()
    """Each measured step ÷ their mean: how one GPU's steps vary (none for a described one)."""

    @property
    def total_bytes(self) -> int:
        return sum(self.gradient_bytes)

    def slowest(self, ranks: int) -> float:
        """A synchronous step goes at its slowest rank's pace: the expected largest of `ranks`
        independent draws from the measured steps, as a share of their mean (1 with one
        rank, or with no steps measured). Ranks whose steps vary together wait less."""
        ratios = sorted(self.step_ratios)
        count = len(ratios)
        if ranks == 1 or count < 2:
            return 1.0
        return sum(
            ratio * ((i / count) ** ranks - ((i - 1) / count) ** ranks)
            for i, ratio in enumerate(ratios, 1)
        )

    def at_speed(self, step_s: float, batch: int, source: str) -> Workload:
        """The same step's shape on a GPU that takes `step_s` for `batch` images: every moment
        scaled alike (a faster GPU runs each layer faster, the gradients stay the same)."""
        scale = step_s / self.step_s
        return replace(self, batch=batch, step_s=step_s, backward_end_s=self.backward_end_s * scale,
                       ready_s=tuple(t * scale for t in self.ready_s), source=source,
                       overhead_s=self.overhead_s * scale)  # fmt: skip

    def with_gradient(self, total_bytes: int, bucket_bytes: int) -> Workload:
        """The same gradients in the same order, scaled to `total_bytes` in all."""
        scale = total_bytes / self.total_bytes
        sizes = tuple(max(1, round(size * scale)) for size in self.gradient_bytes)
        return replace(self, gradient_bytes=sizes, bucket_bytes=bucket_bytes)


def from_result(result: ModelResult, server: str) -> Workload:
    """A one-GPU result's workload: its mean timed step (images/s is counted over the mean,
    so a one-GPU prediction is the run itself), its profile's shape."""
    profile = result.profile
    if profile is None or not result.images_per_s:
        raise ValueError(f"{server}'s {result.model} result has no step profile")
    if result.gpus != 1 or result.servers != 1:
        raise ValueError("a step profile comes from a run on one GPU (or one process)")
    step_s = result.batch / result.images_per_s
    if (unfit := _unfit(result, result.images_per_s, step_s, profile)) is not None:
        raise ValueError(f"{server}'s {result.model} result: {unfit} cannot be predicted from")
    measured = profile.overlap and len(profile.ready) == len(profile.gradient_bytes)
    ready = tuple(f * step_s for f in profile.ready) if measured else ()
    timing = MEASURED if measured else AFTER_BACKWARD
    what = f"{len(profile.gradient_bytes)} gradients" + (" timed by hooks" if measured else "")
    mean = sum(result.step_times) / len(result.step_times) if result.step_times else 0.0
    ratios = tuple(t / mean for t in result.step_times) if mean > 0 else ()
    if len(ratios) > 1:
        what += f", {len(ratios)} steps within {min(ratios) - 1:+.0%}/{max(ratios) - 1:+.0%}"
    return Workload(
        model=result.model,
        batch=result.batch,
        step_s=step_s,
        backward_end_s=(profile.backward if measured else 1.0) * step_s,
        gradient_bytes=tuple(profile.gradient_bytes),
        ready_s=ready,
        bucket_bytes=profile.bucket_bytes,
        first_bucket_bytes=profile.first_bucket_bytes,
        overlap=measured,
        timing=timing,
        source=f"measured: {result.framework} {result.model} on {server} ({result.device}), "
        f"batch {result.batch}, {fmt_ms(step_s)} a step, {what}",
        overhead_s=profile.overhead * step_s,
        step_ratios=ratios,
    )


def _unfit(
    result: ModelResult, images_per_s: float, step_s: float, profile: StepProfile
) -> str | None:
    """Which of a result's figures no run could have given (a damaged or hand-edited file)."""
    fractions = (profile.backward, *profile.ready)
    checks = (
        (_positive(images_per_s), f"images/s {images_per_s!r}"),
        (result.batch >= 1, f"batch {result.batch!r}"),
        (_positive(step_s), "its step time"),
        (bool(profile.gradient_bytes) and min(profile.gradient_bytes) > 0, "its gradient sizes"),
        (all(0 <= f <= 1 for f in fractions), "its gradients' ready times"),
        (profile.overhead == 0 or _positive(profile.overhead), f"overhead {profile.overhead!r}"),
        (all(map(_positive, result.step_times)), "its step times"),
    )
    return next((what for fit, what in checks if not fit), None)


def _positive(value: float) -> bool:
    return 0 < value < math.inf


def described(model: str, batch: int, step_s: float, gradient_bytes: int, overlap: bool,
              bucket_bytes: int = DDP_BUCKET_BYTES) -> Workload:  # fmt: skip
    """A workload nobody profiled here: its gradient cut into equal pieces, ready evenly over
    the last two thirds of the step (or all at its end without overlap)."""
    if batch <= 0 or step_s <= 0 or gradient_bytes <= 0:
        raise ValueError("a workload needs a positive batch, step time and gradient size")
    pieces = ASSUMED_PIECES
    size = gradient_bytes // pieces
    sizes = tuple([size] * (pieces - 1) + [gradient_bytes - size * (pieces - 1)])
    start = step_s / 3
    ready = tuple(start + (i + 1) / pieces * (step_s - start) for i in range(pieces))
    return Workload(
        model=model, batch=batch, step_s=step_s, backward_end_s=step_s,
        gradient_bytes=sizes, ready_s=ready if overlap else (), bucket_bytes=bucket_bytes,
        first_bucket_bytes=DDP_FIRST_BUCKET_BYTES if overlap else bucket_bytes,
        overlap=overlap, timing=ASSUMED if overlap else AFTER_BACKWARD,
        source=f"described: {model}, batch {batch}, {fmt_ms(step_s)} a step, "
        f"{fmt_bytes(gradient_bytes)} of gradients",
    )  # fmt: skip


def buckets(workload: Workload) -> list[tuple[int, float]]:
    """(bytes, ready) of each all-reduce, in order, as DDP makes them: gradients in the order
    they are ready, packed until a bucket's cap (the first one's smaller), each bucket ready
    with its last gradient. Without overlap every pack is ready once backward is done
    (TensorFlow's strategies pack gradients by size likewise); a cap of 0: one all-reduce."""
    found: list[tuple[int, float]] = []
    size, ready = 0, 0.0
    cap = workload.first_bucket_bytes or workload.bucket_bytes
    moments = (
        workload.ready_s
        if workload.overlap
        else [workload.backward_end_s] * len(workload.gradient_bytes)
    )
    for nbytes, at in zip(workload.gradient_bytes, moments, strict=True):
        size, ready = size + nbytes, max(ready, at)
        if cap and size >= cap:
            found.append((size, ready))
            size, cap = 0, workload.bucket_bytes
    if size:
        found.append((size, ready))
    return found
