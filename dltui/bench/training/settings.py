"""What a training rank decides once it knows its device, and how its times become a result.

Shared by both frameworks, so a PyTorch and a TensorFlow figure mean the same thing:
images/s = replicas × batch × timed steps ÷ the timed steps' wall time (tf_cnn_benchmarks'
definition), its spread is 1.4826 × the MAD of the per-step rates (tf_cnn_benchmarks' jitter).
Tokens/s for the GPT models likewise, with sequences × their length in place of images, and
MFU over the GPU's dense 16-bit peak (plans/peaks.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dltui.bench.models import default_batch
from dltui.bench.training import TrainJob
from dltui.plans import gpt
from dltui.plans.formulas import spread
from dltui.plans.peaks import dense_16bit_peak, mfu
from dltui.protocol.bench_results import ModelResult

MOMENTUM = 0.9
WEIGHT_DECAY = 4e-5  # tf_cnn_benchmarks' default, for both frameworks' SGD


@dataclass(frozen=True, slots=True)
class Settings:
    batch: int
    precision: str
    channels_last: bool
    compile: bool


def resolve(job: TrainJob, gpu_memory: int | None) -> Settings:
    """The job's choices, and where it left one open, the fast one for the device (a GPU with
    `gpu_memory` bytes, or the CPU: None): bf16, channels-last, compiled and a batch sized to
    the GPU's memory; fp32 and eager on a CPU (channels-last there too in TensorFlow, whose
    CPU kernels take no other layout)."""
    on_gpu = gpu_memory is not None
    channels_last = on_gpu or job.framework == "tensorflow"
    return Settings(
        batch=job.batch or default_batch(job.model, gpu_memory),
        precision=job.precision or ("bf16" if on_gpu else "fp32"),
        channels_last=channels_last if job.channels_last is None else job.channels_last,
        compile=on_gpu if job.compile is None else job.compile,
    )


@dataclass(frozen=True, slots=True)
class GptSettings:
    batch: int
    """Sequences per replica and step."""
    seq: int
    precision: str
    compile: bool
    checkpoint: bool
    """Recompute activations in the backward pass: the batch does not fit otherwise."""
    channels_last: bool = False
    """Images' layout: never, for tokens (so a result says the same of both)."""


def resolve_gpt(job: TrainJob, gpu_memory: int | None, replicas: int) -> GptSettings:
    """A GPT run's choices: on a GPU bf16, compiled, the model's sequence length and a batch
    of about as many tokens as the H200's default, halved (or checkpointed) until it fits the
    GPU's memory (FSDP: with the weights sharded over the replicas); on a CPU fp32, eager,
    short sequences."""
    shape = gpt.SHAPES[job.model]
    if gpu_memory is None:
        seq = job.seq_len or gpt.CPU_SEQ[job.model]
        return GptSettings(job.batch or gpt.CPU_BATCH[job.model], seq,
                           job.precision or "fp32", bool(job.compile), False)  # fmt: skip
    seq = job.seq_len or shape.seq
    shards = replicas if job.parallel == "fsdp" else 1
    wanted = job.batch or max(1, gpt.GPU_BATCH[job.model] * shape.seq // seq)
    batch, checkpoint = gpt.fit(shape, wanted, seq, gpu_memory, shards)
    if job.batch:  # asked for: kept, checkpointed if that is what it needs
        batch, checkpoint = job.batch, checkpoint or batch < job.batch
    compiled = True if job.compile is None else job.compile
    return GptSettings(batch, seq, job.precision or "bf16", compiled, checkpoint)


def token_result(
    job: TrainJob,
    settings: GptSettings,
    framework: str,
    device: str,
    replicas: int,
    step_times: list[float],
    losses: list[float],
    gpu_name: str | None,
    peak_memory: int | None,
) -> ModelResult:
    """The result of a GPT run from its timed steps (the slowest replica's): tokens/s, and MFU
    where the GPU's peak is known and the run was 16-bit (a 32-bit run is not held to it)."""
    tokens = replicas * settings.batch * settings.seq
    total = sum(step_times)
    tokens_per_s = tokens * len(step_times) / total
    sixteen_bit = settings.precision in ("bf16", "fp16")
    peak = dense_16bit_peak(gpu_name) if gpu_name and sixteen_bit else None
    peak_tflops = peak[1] if peak else None
    per_token = gpt.train_flops_per_token(gpt.SHAPES[job.model], settings.seq)
    return ModelResult(
        **_what_ran(job, settings, framework, device, replicas, 0),
        steps=len(step_times),
        spread=spread([tokens / t for t in step_times]),
        step_times=[round(t, 7) for t in step_times],
        seq_len=settings.seq,
        tokens_per_s=tokens_per_s,
        mfu=mfu(per_token, tokens_per_s, replicas, peak_tflops),
        peak_tflops=peak_tflops,
        parallel=job.parallel if framework == "torch" else "ddp",
        peak_memory=peak_memory,
        losses=[round(loss, 5) for loss in losses],
    )


def throughput_result(
    job: TrainJob,
    settings: Settings,
    framework: str,
    device: str,
    replicas: int,
    image_size: int,
    step_times: list[float],
) -> ModelResult:
    """The result of a synthetic-data run from its timed steps (the slowest replica's)."""
    images = replicas * settings.batch
    total = sum(step_times)
    return ModelResult(
        **_what_ran(job, settings, framework, device, replicas, image_size),
        steps=len(step_times),
        images_per_s=images * len(step_times) / total,
        spread=spread([images / t for t in step_times]),
        step_times=[round(t, 7) for t in step_times],
    )


def accuracy_result(
    job: TrainJob,
    settings: Settings,
    framework: str,
    device: str,
    replicas: int,
    image_size: int,
    steps: int,
    training_s: float,
    reached_s: float | None,
    accuracy: float,
    epochs: int,
) -> ModelResult:
    """The result of a time-to-accuracy run: images/s over its training steps alone, the
    time it took to reach the target (None: not within its epochs)."""
    return ModelResult(
        **_what_ran(job, settings, framework, device, replicas, image_size),
        steps=steps,
        images_per_s=replicas * settings.batch * steps / training_s,
        data="folder",
        time_to_accuracy_s=reached_s,
        accuracy=accuracy,
        target_accuracy=job.target_accuracy,
        epochs=epochs,
    )


def _what_ran(
    job: TrainJob,
    settings: Settings | GptSettings,
    framework: str,
    device: str,
    replicas: int,
    size: int,
) -> dict[str, Any]:
    """The fields every training result has: the run's model, place and settings."""
    return {
        "model": job.model, "framework": framework, "device": device,
        "precision": settings.precision, "gpus": replicas, "batch": settings.batch,
        "servers": job.servers, "image_size": size, "compiled": settings.compile,
        "channels_last": settings.channels_last,
    }  # fmt: skip
