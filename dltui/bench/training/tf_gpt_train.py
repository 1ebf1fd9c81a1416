"""A GPT model trained in TensorFlow: its replicas under the process's tf.distribute strategy
(data-parallel, as tf_train.py runs the CNNs), AdamW as GPT-3 trained, Keras mixed precision
and XLA where asked. The copy task's tokens are drawn afresh on each replica every step, as in
PyTorch, so the loss trajectory tells a working model from a broken one here too. Each step is
timed by the wall clock up to reading back the loss, which waits for the device.
"""

from __future__ import annotations

import time
from typing import Any

from dltui.bench.models import keras_gpt, torch_gpt
from dltui.bench.ranks import Reporter, ShouldStop
from dltui.bench.training import TrainJob
from dltui.bench.training.settings import GptSettings, token_result
from dltui.bench.training.torch_gpt_train import BETAS, WEIGHT_DECAY
from dltui.plans import gpt
from dltui.protocol.bench_results import ModelResult


def throughput(
    tf: Any,
    job: TrainJob,
    settings: GptSettings,
    strategy: Any,
    report: Reporter,
    should_stop: ShouldStop,
    gpu_name: str | None,
) -> ModelResult | None:
    keras = tf.keras
    shape = gpt.SHAPES[job.model]
    replicas = strategy.num_replicas_in_sync
    global_batch = settings.batch * replicas
    period = torch_gpt.period_for(settings.seq)
    with strategy.scope():
        model = keras_gpt.build(shape, settings.seq)
        optimizer = keras.optimizers.AdamW(_warmed_up(keras, job), beta_1=BETAS[0],
                                           beta_2=BETAS[1], weight_decay=WEIGHT_DECAY)  # fmt: skip
        if settings.precision == "fp16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        optimizer.build(model.trainable_variables)  # its slots now, not in a traced step
    per_token = tf.nn.sparse_softmax_cross_entropy_with_logits
    scaled = settings.precision == "fp16"

    @tf.function(jit_compile=settings.compile)
    def gradients(ids: Any) -> tuple[Any, Any]:
        with tf.GradientTape() as tape:
            logits = model(ids[:, :-1], training=True)
            losses = tf.reduce_mean(per_token(labels=ids[:, 1:], logits=logits), axis=1)
            loss = tf.nn.compute_average_loss(losses, global_batch_size=global_batch)
            objective = optimizer.scale_loss(loss) if scaled else loss
        return loss, tape.gradient(objective, model.trainable_variables)

    def replica_step() -> Any:
        ids = keras_gpt.copy_task(tf, settings.batch, settings.seq, shape.vocab, period)
        loss, grads = gradients(ids)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    @tf.function
    def step() -> Any:
        losses = strategy.run(replica_step)
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    total = job.warmup + job.steps
    times, losses = [], []
    for done in range(total):
        if should_stop():
            return None
        begin = time.perf_counter()
        losses.append(float(step()))  # reading the loss back waits for the device
        if done >= job.warmup:
            times.append(time.perf_counter() - begin)
        report.progress((done + 1) / total)
    device = "cuda" if tf.config.list_logical_devices("GPU") else "cpu"
    return token_result(job, settings, "tensorflow", device, replicas, times, losses, gpu_name,
                        None)  # fmt: skip


def _warmed_up(keras: Any, job: TrainJob) -> Any:
    """The learning rate as the torch ranks schedule it (gpt.warmup_factor), for Keras."""

    class WarmedUp(keras.optimizers.schedules.LearningRateSchedule):
        def __call__(self, step: Any) -> Any:
            rising = (keras.ops.cast(step, "float32") + 1.0) / gpt.RATE_WARMUP_STEPS
            return job.learning_rate * keras.ops.minimum(1.0, rising)

    return WarmedUp()
