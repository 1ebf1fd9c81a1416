"""What a training rank decides once it knows its device, and how its times become a result.

Shared by both frameworks, so a PyTorch and a TensorFlow figure mean the same thing:
images/s = replicas × batch × timed steps ÷ the timed steps' wall time (tf_cnn_benchmarks'
definition), its spread is 1.4826 × the MAD of the per-step rates (tf_cnn_benchmarks' jitter).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dltui.bench.models import default_batch
from dltui.bench.training import TrainJob
from dltui.plans.formulas import spread
from dltui.protocol.messages import ModelResult

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
    job: TrainJob, settings: Settings, framework: str, device: str, replicas: int, size: int
) -> dict[str, Any]:
    """The fields every training result has: the run's model, place and settings."""
    return {
        "model": job.model, "framework": framework, "device": device,
        "precision": settings.precision, "gpus": replicas, "batch": settings.batch,
        "servers": job.servers, "image_size": size, "compiled": settings.compile,
        "channels_last": settings.channels_last,
    }  # fmt: skip
