"""One training step taken apart for the what-if predictor: each gradient's size and when
backward made it ready, as fractions of the step (protocol's StepProfile).

The framework-specific part is only how the moments are taken (torch: a hook per gradient,
CUDA events on a GPU); putting them in order and into fractions is here, once.
"""

from __future__ import annotations

from collections.abc import Sequence

from dltui.plans.formulas import median
from dltui.plans.names import DDP_BUCKET_BYTES, DDP_FIRST_BUCKET_BYTES
from dltui.protocol.bench_results import StepProfile


def from_steps(
    sizes: Sequence[int],
    steps: Sequence[tuple[float, float, Sequence[float], float]],
    params: int,
    collective: str,
) -> StepProfile:
    """A profile from profiled steps, each (forward end, backward end, each gradient's ready
    time, step end), in seconds from the step's start; `sizes` in bytes, in the same order as
    the ready times. The median of each moment over the steps, in the order backward made
    the gradients."""
    totals = [step[3] for step in steps]
    total = median(totals)
    ready = [median([step[2][i] / step[3] for step in steps]) for i in range(len(sizes))]
    order = sorted(range(len(sizes)), key=lambda i: ready[i])
    return StepProfile(
        forward=round(median([step[0] / step[3] for step in steps]), 6),
        backward=round(median([step[1] / step[3] for step in steps]), 6),
        gradient_bytes=[int(sizes[i]) for i in order],
        ready=[round(ready[i], 6) for i in order],
        params=params,
        bucket_bytes=DDP_BUCKET_BYTES,
        first_bucket_bytes=DDP_FIRST_BUCKET_BYTES,
        overlap=total > 0,
        collective=collective,
        method="hooks",
    )


def sizes_only(
    sizes_in_backward_order: Sequence[int], params: int, collective: str, pack_bytes: int
) -> StepProfile:
    """A framework that all-reduces only after backward (TensorFlow's strategies): the sizes
    are all there is to know, and nothing overlaps."""
    return StepProfile(
        forward=0.0,
        backward=1.0,
        gradient_bytes=[int(size) for size in sizes_in_backward_order],
        params=params,
        bucket_bytes=pack_bytes,
        first_bucket_bytes=pack_bytes,
        overlap=False,
        collective=collective,
        method="sizes",
    )
