"""Collective bandwidth through the frameworks' own engines: all-reduce at DeepBench's sizes,
all-gather, reduce-scatter, all-to-all and broadcast at nccl-tests' (kernels/collectives.py).

torch.distributed (NCCL on GPUs, Gloo on CPU processes) and, for all-reduce,
tf.distribute.MirroredStrategy move the data; this module starts the ranks, times the
collective and reports nccl-tests' algbw and busbw. Each rank is a child process
(`python -m dltui.bench.kernels.allreduce_process`), so a crash takes nothing else down and
TensorFlow sets up its logical devices in a fresh interpreter. A child reports in frames on
stdout (results, its end) and stops between sizes once its stdin closes, which also happens
when its parent dies. A run on some of the GPUs uses those the topology joins best
(bench/placement.py), and its results say which.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from dltui.bench.backends import CPU_WARMUP, GPU_WARMUP, MIN_TIMED
from dltui.bench.kernels import beside
from dltui.bench.kernels.collectives import elements, prepare
from dltui.bench.placement import Placement, place
from dltui.bench.ranks import (
    OnProgress,
    OnResult,
    ShouldStop,
    join_process_group,
    run_folder,
    supervise,
)
from dltui.bench.shapes import AllReduceCase
from dltui.bench.timing import Budget
from dltui.plans.formulas import collective_busbw, gbps, median, spread
from dltui.plans.names import MULTICAST_OFF
from dltui.protocol.bench_plans import ClusterRole, KernelPlan
from dltui.protocol.bench_results import KernelResult

DEFAULT_ITERATIONS = 1000
"""DeepBench repeats each size 1,000 to 10,000 times; `max_seconds` usually ends the loop first."""
STARTUP_S = 60.0
"""Allowance for a rank to import its framework and meet its peers."""


@dataclass(frozen=True, slots=True)
class AllReduceJob:
    """What every rank needs, as plain values that fit on a command line."""

    framework: str
    device: str
    """"cuda" or "cpu"; TensorFlow also takes "auto" and decides in its own process."""
    ranks: int
    """Torch: the world size. TensorFlow: replicas, 0 for every GPU or 2 CPU devices."""
    floats: list[int]
    ops: list[str]
    """Each size's collective (plans/names.COLLECTIVES); TensorFlow times all-reduce only."""
    warmup: int | None
    """None: the backends' default for the device the rank finds itself on."""
    iterations: int
    max_seconds: float
    timeout_s: float
    """Rendezvous and collective timeout: a rank whose peer vanished fails, never hangs."""
    servers: int = 1
    """Servers the ranks span: a link curve between servers needs to know (dltui predict)."""

    def budget(self, on_gpu: bool) -> Budget:
        warmup = self.warmup if self.warmup is not None else GPU_WARMUP if on_gpu else CPU_WARMUP
        return Budget(warmup, self.iterations, self.max_seconds)


# --- the caller's side -------------------------------------------------------------------------


def run_allreduce(
    plan: KernelPlan,
    cases: list[AllReduceCase],
    on_result: Callable[[KernelResult], None],
    on_progress: OnProgress,
    should_stop: ShouldStop,
    ops: list[str] | None = None,
) -> None:
    """Time a collective of float32 for each case, `ops` saying which for each (a SUM
    all-reduce where it is None), and report one KernelResult per case. Every case runs in
    one group of ranks: meeting the peers costs seconds, a case milliseconds.

    Failures do not raise: when a rank reports an exception, exits, or stays silent past the
    timeout, every rank is stopped and each size not measured yet gets a KernelResult whose
    `error` says why (e.g. "rank 1 exited with code -9"). `should_stop` ends the run after the
    current size, with no result for the rest.
    """
    if not cases:
        return
    role = plan.cluster
    if role is not None:
        plan = replace(plan, gpus=role.local_ranks)
    device, ranks, problem = plan.device, plan.gpus, None
    if plan.framework == "torch":
        try:
            device, ranks = _torch_layout(plan)
        except _LayoutError as error:
            problem = str(error)
    if role is not None:
        ranks = role.world
    ops = ops or ["allreduce"] * len(cases)
    job = AllReduceJob(
        plan.framework, device, ranks, [case.floats for case in cases], ops, plan.warmup,
        plan.iterations or DEFAULT_ITERATIONS, plan.max_seconds, STARTUP_S + 10 * plan.max_seconds,
        role.servers if role is not None else 1,
    )  # fmt: skip
    placement = _placement(plan, device, ranks) if role is None and problem is None else None
    if placement is not None:
        on_result = placement.mark(on_result)
    if problem is not None:
        for op, case in zip(ops, cases, strict=True):
            on_result(allreduce_result(job, op, case, device, ranks, error=problem))
        return
    with run_folder() as folder:
        commands = _rank_commands(plan, job, role, ranks, folder.rendezvous)
        silence_s = job.timeout_s + STARTUP_S
        labels = [f"{op} {case.label}" for op, case in zip(ops, cases, strict=True)]
        reports = role is None or role.rank_offset == 0  # global rank 0 reports, on its server
        env = folder.environment(plan.framework, placement.env if placement else None)
        measured, failure = supervise(
            commands, labels, silence_s, reports, on_result, on_progress, should_stop,
            KernelResult, env,
        )  # fmt: skip
    if failure is not None:
        for op, case in list(zip(ops, cases, strict=True))[measured:]:
            on_result(allreduce_result(job, op, case, device, ranks, error=failure))


def _rank_commands(
    plan: KernelPlan, job: AllReduceJob, role: ClusterRole | None, ranks: int, here: str
) -> list[list[str]]:
    """The rank processes of this server; `here` is where they meet when the run is this
    server's alone."""
    if plan.framework == "tensorflow" and role is not None:  # one TF worker of several
        workers = json.dumps(role.peers)
        return [_command(job, "--tf-workers", workers, "--tf-task", str(role.rank_offset))]
    if plan.framework == "tensorflow":
        return [_command(job)]
    if role is not None:  # one server of several: global ranks, the client's rendezvous
        master = f"{role.master_addr}:{role.master_port}"
        return [
            _command(job, "--rank", str(role.rank_offset + local), "--world", str(role.world),
                     "--master", master, "--local-rank", str(local))
            for local in range(role.local_ranks)
        ]  # fmt: skip
    return [
        _command(job, "--rank", str(rank), "--world", str(ranks), "--master", here)
        for rank in range(ranks)
    ]


def _placement(plan: KernelPlan, device: str, ranks: int) -> Placement | None:
    """The GPUs the topology joins best for these ranks (torch: one a rank; TensorFlow: its
    replicas); None on CPUs."""
    if device == "cpu" or (plan.framework == "torch" and device != "cuda"):
        return None
    return place(ranks)


class _LayoutError(Exception):
    """The plan asks for devices this host does not have."""


def _torch_layout(plan: KernelPlan) -> tuple[str, int]:
    """Device and world size: one rank per GPU, or CPU processes when there is no GPU."""
    gpus = 0 if plan.device == "cpu" else _cuda_devices()
    if plan.device == "cuda" and gpus == 0:
        raise _LayoutError("PyTorch sees no CUDA GPU")
    if gpus == 0:
        cores = os.cpu_count() or 1
        if plan.gpus > cores:
            raise _LayoutError(f"the plan asks for {plan.gpus} CPU processes; {cores} cores here")
        return "cpu", plan.gpus or 2
    if plan.gpus > gpus:
        raise _LayoutError(f"the plan asks for {plan.gpus} GPUs; this host has {gpus}")
    return "cuda", plan.gpus or gpus


def _cuda_devices() -> int:
    """The GPUs torch sees. Asked only when the plan may use them: the import alone is ~1.2 s
    of CPU, and on a CPU plan the worker would pay it before its ranks pay their own."""
    import torch

    return int(torch.cuda.device_count())


def _command(job: AllReduceJob, *rank_args: str) -> list[str]:
    job_json = json.dumps(asdict(job))
    return [
        sys.executable,
        "-m",
        "dltui.bench.kernels.allreduce_process",
        "--job",
        job_json,
        *rank_args,
    ]


# --- the ranks' side ---------------------------------------------------------------------------


def allreduce_result(
    job: AllReduceJob,
    op: str,
    case: AllReduceCase,
    device: str,
    ranks: int,
    times: list[float] | None = None,
    error: str | None = None,
) -> KernelResult:
    """nccl-tests' figures from per-iteration times (algbw = bytes ÷ median), or an error. The
    case is as moved: a split collective's size a multiple of the ranks."""
    if ranks:
        case = AllReduceCase(elements(op, case.floats, ranks))
    span = {"servers": job.servers} if job.servers > 1 else {}
    result = KernelResult(
        kind=op,
        framework=job.framework,
        device=device,
        precision="fp32",
        direction=op,
        shape=f"{case.label} ×{ranks}" if ranks else case.label,
        params={**case.params, "ranks": ranks, **span} if ranks else case.params,
        error=error,
    )
    if not times:
        return result
    middle = median(times)
    algbw = gbps(case.nbytes, middle)
    busbw = collective_busbw(op, algbw, ranks)
    return replace(result, iterations=len(times), median_s=middle, spread_s=spread(times),
                   min_s=min(times), gbps=algbw, busbw_gbps=busbw)  # fmt: skip


def timed_count(
    step: Callable[[], object],
    sync: Callable[[], object],
    budget: Budget,
    slowest: Callable[[list[float]], list[float]],
) -> int:
    """Warm up (at least once, to size the loop), then return the timed loop's length: the
    budget's, cut to fit max_seconds and the same on every rank (`slowest` takes the maximum
    estimate over ranks), or the ranks would issue different numbers of collectives."""
    warmup = max(1, budget.warmup)
    sync()
    start = time.perf_counter()
    for _ in range(warmup):
        step()
    sync()
    per_call = slowest([(time.perf_counter() - start) / warmup])[0]
    fits = int(budget.max_seconds / per_call) if per_call > 0 else budget.iterations
    return min(budget.iterations, max(MIN_TIMED, fits))


def wall_times(step: Callable[[], object], count: int) -> list[float]:
    """Per-call seconds of a call that returns when done, as Gloo's all_reduce does."""
    times = []
    for _ in range(count):
        begin = time.perf_counter()
        step()
        times.append(time.perf_counter() - begin)
    return times


def allreduce_rank(
    rank: int,
    world: int,
    master: str,
    job: AllReduceJob,
    on_result: OnResult,
    should_stop: ShouldStop,
    local_rank: int | None = None,
) -> None:
    """One torch.distributed rank; rank 0 reports. A multi-server run starts one per GPU, with
    rank 0's address as rendezvous (`master`) and `local_rank` the GPU's index on its host.

    Each size: one call checked against what it must give (kernels/collectives.py), warm-up,
    then timed iterations (CUDA events on GPUs; on CPU, Gloo's calls return when done). A
    collective is as fast as its slowest rank, so each iteration's time is the maximum over
    ranks.
    """
    os.environ.update(MULTICAST_OFF)
    import torch
    import torch.distributed as dist

    on_gpu = job.device == "cuda"
    if on_gpu:
        torch.cuda.set_device(rank if local_rank is None else local_rank)
    device = torch.device("cuda", torch.cuda.current_device()) if on_gpu else torch.device("cpu")
    sync = torch.cuda.synchronize if on_gpu else lambda: None
    join_process_group(device, master, rank, world, job.timeout_s)

    def slowest(values: list[float]) -> list[float]:
        maxima = torch.tensor(values, dtype=torch.float64, device=device)
        dist.all_reduce(maxima, op=dist.ReduceOp.MAX)
        return maxima.tolist()

    def event() -> Any:
        return torch.cuda.Event(enable_timing=True)

    probe: beside.Probe | None = None
    try:
        for op, floats in zip(job.ops, job.floats, strict=True):
            if slowest([float(should_stop())])[0]:
                break  # any rank asked: all stop at the same size
            prepared = prepare(torch, op, floats, rank, world, device)
            prepared.step()
            wrong = prepared.check()
            if wrong is not None:
                raise RuntimeError(wrong)
            prepared.reset()
            step = prepared.step
            count = timed_count(step, sync, job.budget(on_gpu), slowest)
            if on_gpu:
                events = [(event(), event()) for _ in range(count)]
                for begin, end in events:
                    begin.record()
                    step()
                    end.record()
                sync()
                times = [begin.elapsed_time(end) / 1e3 for begin, end in events]
            else:
                times = wall_times(step, count)
            times = slowest(times)
            lost_s = None
            if not on_gpu and prepared.start is not None:
                probe = probe or beside.Probe(torch)
                lost_s = probe.lost(prepared.start, median(times), slowest, job.max_seconds)
            if rank == 0:
                case = AllReduceCase(floats)
                result = allreduce_result(job, op, case, job.device, world, times)
                on_result(replace(result, compute_lost_s=lost_s))
    finally:
        dist.destroy_process_group()
