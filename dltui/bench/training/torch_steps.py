"""How a torch run's steps are timed, CNN or GPT: the warm-up steps untimed, then each timed
step between CUDA events on a GPU (the host queues steps ahead of the device, so its own clock
would time the queueing) and by the wall clock on a CPU (each step returns when it is done)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

from dltui.bench.ranks import Reporter, ShouldStop
from dltui.bench.training import TrainJob


def timed_steps(
    torch: Any,
    device: Any,
    job: TrainJob,
    step: Callable[[], object],
    report: Reporter,
    should_stop: ShouldStop,
) -> list[float] | None:
    """Each timed step's seconds, `job.warmup` steps after the first; None where the run was
    stopped. On a GPU the device's peak memory counts from the first timed step."""
    total = job.warmup + job.steps
    for done in range(job.warmup):
        if should_stop():
            return None
        step()
        report.progress((done + 1) / total)
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(device)
        marks = [torch.cuda.Event(enable_timing=True) for _ in range(job.steps + 1)]
        for done in range(job.steps):
            marks[done].record()
            step()
            report.progress((job.warmup + done + 1) / total)
        marks[-1].record()
        torch.cuda.synchronize()
        return [a.elapsed_time(b) / 1e3 for a, b in itertools.pairwise(marks)]
    times = []
    for done in range(job.steps):
        if should_stop():
            return None
        begin = time.perf_counter()
        step()
        times.append(time.perf_counter() - begin)
        report.progress((job.warmup + done + 1) / total)
    return times
