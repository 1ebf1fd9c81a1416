"""Training throughput: each (model, GPU count) of a model plan is one run of rank processes.
The CNNs report images/s; the GPT models (plans/gpt.py) tokens/s, MFU and their loss, and
train with DDP or FSDP as the plan says.

PyTorch runs one process per GPU (DDP over NCCL; Gloo between CPU processes), TensorFlow one
process per server (MirroredStrategy over its GPUs; MultiWorkerMirroredStrategy across
servers). The processes are `python -m dltui.bench.training.rank`, started and watched by
bench/ranks.py, so a crash or an out-of-memory error fails that run and the next one goes on.
A run on some of a server's GPUs uses those the topology joins best (bench/placement.py), and
its result says which.
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import asdict, dataclass, replace

from dltui.bench.cuda_guard import reported_gpus
from dltui.bench.models import learning_rate
from dltui.bench.placement import Placement, place
from dltui.bench.ranks import OnProgress, OnResult, ShouldStop, run_folder, supervise
from dltui.bench.reference import published_mfu, published_training
from dltui.formatting import counted
from dltui.plans.check import PlanError
from dltui.plans.gpt import is_gpt
from dltui.plans.names import CPU_RANKS
from dltui.protocol.bench_plans import ModelPlan
from dltui.protocol.bench_results import ModelResult

STARTUP_S = 120.0
"""Allowance for a rank to import its framework, meet its peers and compile the model."""


@dataclass(frozen=True, slots=True)
class TrainJob:
    """One run, as plain values that fit on a rank's command line. None: decided by the rank
    once it knows its device (bench/models: the fast choices on a GPU)."""

    framework: str
    model: str
    device: str
    """"auto", "cuda" or "cpu"."""
    replicas: int
    """Replicas over the whole run: torch's world size; TensorFlow's GPUs (or CPU devices)
    per worker times the workers. 0 (TensorFlow only): every local GPU."""
    servers: int
    batch: int | None
    precision: str | None
    channels_last: bool | None
    compile: bool | None
    warmup: int
    steps: int
    image_size: int
    classes: int
    learning_rate: float
    data_dir: str | None
    target_accuracy: float | None
    holdout: float
    max_epochs: int
    timeout_s: float
    """Rendezvous and collective timeout: a rank whose peer vanished fails, never hangs."""
    compile_mode: str = "default"
    """torch.compile's mode; benchmarks/train_tuning.py tries the others."""
    seq_len: int | None = None
    """GPT models: tokens per sequence; None: decided by the rank."""
    parallel: str = "ddp"
    """GPT models: "ddp" or "fsdp" (full sharding)."""


def label(job: TrainJob) -> str:
    """'resnet50 torch on 1 GPU', 'alexnet tensorflow on 2 procs over 2 servers'. On "auto" the
    GPUs NVML reports decide (cuda_guard refuses a run that would miss them)."""
    on_cpu = job.device == "cpu" or (job.device == "auto" and reported_gpus() == 0)
    unit = "proc" if on_cpu else "GPU"
    count = "all GPUs" if job.replicas == 0 else counted(job.replicas, unit)
    where = f" over {job.servers} servers" if job.servers > 1 else ""
    return f"{job.model} {job.framework} on {count}{where}"


def sweep(plan: ModelPlan) -> list[tuple[str, int]]:
    """(model, GPU count) of each run, in the order they run: per model, one GPU first and all
    of them (0) last, whatever order the plan gives. Each count's efficiency is against one
    GPU's, which a table printed as results arrive can say only once that one is in."""
    counts = sorted(plan.gpus, key=lambda gpus: gpus or math.inf)
    return [(model, gpus) for model in plan.models for gpus in counts]


def run_models(
    plan: ModelPlan, on_result: OnResult, on_progress: OnProgress, should_stop: ShouldStop
) -> None:
    """Every model on every GPU count of the plan, in order, a ModelResult each (with an
    `error` where a run failed: the others go on)."""
    runs = sweep(plan)
    for done, (model, gpus) in enumerate(runs):
        if should_stop():
            return
        try:
            job = _job(plan, model, gpus)
        except PlanError as exc:  # more GPUs than this server has: this run fails, not all
            if plan.cluster is not None:
                raise
            on_result(_failed(_job(plan, model, 1), str(exc), gpus))
            continue
        step_labels = [label(job)]
        placement = _placement(plan, job)
        emit = placement.mark(on_result) if placement is not None else on_result

        def progress(_done: int, _total: int, text: str, fraction: float | None = None,
                     done: int = done) -> None:  # fmt: skip
            on_progress(done, len(runs), text, fraction)

        def reported(result: ModelResult, emit: OnResult = emit) -> None:
            emit(_with_reference(result))

        with run_folder() as folder:
            commands, reports = _commands(plan, job, folder.rendezvous)
            env = folder.environment(plan.framework, placement.env if placement else None)
            measured, failure = supervise(
                commands, step_labels, job.timeout_s + STARTUP_S, reports, reported, progress,
                should_stop, ModelResult, env,
            )  # fmt: skip
        if failure is not None and plan.cluster is not None:
            # One part of a run across servers: fail the job, so the client stops the others
            # and names this server.
            raise RuntimeError(failure)
        if failure is not None and measured == 0:
            emit(_failed(job, failure, job.replicas))
    on_progress(len(runs), len(runs), "done")


def _placement(plan: ModelPlan, job: TrainJob) -> Placement | None:
    """Where a scale-up run's ranks go; None across servers (every GPU, in order) and on CPUs."""
    if plan.cluster is not None or plan.device == "cpu":
        return None
    if plan.framework == "torch":
        import torch

        if not torch.cuda.device_count():
            return None
    return place(job.replicas)


def _job(plan: ModelPlan, model: str, gpus: int) -> TrainJob:
    role = plan.cluster
    if plan.framework == "tensorflow":
        replicas = gpus  # per worker; the worker knows its GPUs and the cluster's size
    elif role is not None:
        replicas = role.world
    else:
        replicas = _torch_replicas(plan.device, gpus)
    return TrainJob(
        plan.framework, model, plan.device, replicas, role.servers if role else 1, plan.batch,
        plan.precision, plan.channels_last, plan.compile, plan.warmup, plan.steps,
        plan.image_size, plan.classes, plan.learning_rate or learning_rate(model),
        plan.data_dir, plan.target_accuracy, plan.holdout, plan.max_epochs, plan.timeout_s,
        seq_len=plan.seq_len, parallel=plan.parallel,
    )  # fmt: skip


def _torch_replicas(device: str, gpus: int) -> int:
    """One rank per GPU asked for (0: every GPU); CPU processes where there is no GPU."""
    available = 0
    if device != "cpu":  # torch, to count CUDA's GPUs: seconds that a CPU run need not spend
        import torch

        available = torch.cuda.device_count()
    if device == "cuda" and available == 0:
        raise PlanError("the plan asks for CUDA, but PyTorch sees no CUDA GPU")
    if available == 0:
        cores = os.cpu_count() or 1
        if gpus > cores:
            raise PlanError(f"the plan asks for {gpus} CPU processes; {cores} cores here")
        return gpus or CPU_RANKS
    if gpus > available:
        raise PlanError(f"the plan asks for {gpus} GPUs; this server has {available}")
    return gpus or available


def _commands(plan: ModelPlan, job: TrainJob, here: str) -> tuple[list[list[str]], bool]:
    """The rank processes of this server, and whether global rank 0 (which reports) is here;
    `here` is where they meet when the run is this server's alone."""
    role = plan.cluster
    base = [sys.executable, "-m", "dltui.bench.training.rank", "--job", json.dumps(asdict(job))]
    if plan.framework == "tensorflow":
        if role is None:
            return [base], True
        cluster = ["--tf-workers", json.dumps(role.peers), "--tf-task", str(role.rank_offset)]
        return [base + cluster], role.rank_offset == 0
    if role is None:
        master = here
        ranks = [(rank, rank) for rank in range(job.replicas)]
        reports = True
    else:
        master = f"{role.master_addr}:{role.master_port}"
        ranks = [(role.rank_offset + local, local) for local in range(role.local_ranks)]
        reports = role.rank_offset == 0
    world = ["--world", str(job.replicas), "--master", master]
    commands = [
        [*base, "--rank", str(rank), "--local-rank", str(local), *world] for rank, local in ranks
    ]
    return commands, reports


def _with_reference(result: ModelResult) -> ModelResult:
    if result.mfu is not None:  # a GPT run on a GPU whose peak is known
        return replace(result, reference=published_mfu())
    found = published_training(result.model, result.gpus, result.servers)
    if found is None or result.data != "synthetic" or result.device != "cuda":
        return result  # the published figures are GPUs' on synthetic data
    return replace(result, reference=found.label, reference_images_per_s=found.images_per_s)


def _failed(job: TrainJob, reason: str, gpus: int) -> ModelResult:
    return ModelResult(
        model=job.model, framework=job.framework, device=job.device, servers=job.servers,
        precision=job.precision or "", gpus=gpus, batch=job.batch or 0,
        image_size=0 if is_gpt(job.model) else job.image_size, error=reason,
        seq_len=job.seq_len, parallel=job.parallel if is_gpt(job.model) else None,
    )  # fmt: skip
