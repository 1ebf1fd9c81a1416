"""A TensorFlow training process: one per server, its GPUs (or CPU devices) as replicas of a
tf.distribute strategy (bench/tf_strategy.py), Keras models (bench/models/keras_zoo.py), SGD
with momentum, Keras mixed precision for 16-bit (loss scaling for fp16) and XLA where asked.
A GPT model trains in tf_gpt_train.py.

XLA compiles the forward and backward pass of one replica; the optimizer applies the
all-reduced gradients outside it, since cross-replica collectives cannot sit inside an XLA
cluster under MirroredStrategy. Synthetic data is one batch per replica, made on its device.
Each step is timed by the wall clock up to reading back the loss, which waits for the device.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from dltui.bench import tf_strategy
from dltui.bench.models import keras_zoo
from dltui.bench.ranks import Reporter, ShouldStop
from dltui.bench.training import TrainJob, profile
from dltui.bench.training.settings import (
    MOMENTUM,
    WEIGHT_DECAY,
    Settings,
    accuracy_result,
    resolve,
    resolve_gpt,
    throughput_result,
)
from dltui.plans.gpt import is_gpt
from dltui.protocol.bench_results import ModelResult

POLICIES = {"fp16": "mixed_float16", "bf16": "mixed_bfloat16"}


def train(
    job: TrainJob,
    report: Reporter,
    should_stop: ShouldStop,
    workers: list[str] | None = None,
    task: int = 0,
) -> None:
    """Across servers, `workers` is every server's HOST:PORT and `task` this one's index."""
    tf, gpus = tf_strategy.start(job.device, workers, task)
    tf.keras.utils.set_random_seed(0)  # the same initial weights on every run
    if is_gpt(job.model):
        _train_gpt(tf, job, gpus, report, should_stop, workers, task)
    else:
        _train_cnn(tf, job, gpus, report, should_stop, workers, task)
    tf_strategy.leave_together(workers, task, job.timeout_s)


def _train_cnn(
    tf: Any,
    job: TrainJob,
    gpus: list[Any],
    report: Reporter,
    should_stop: ShouldStop,
    workers: list[str] | None,
    task: int,
) -> None:
    """A CNN, data-parallel over the strategy's replicas: throughput, or time to accuracy."""
    settings = resolve(job, _gpu_memory() if gpus else None)
    if not gpus and not settings.channels_last:
        raise ValueError("TensorFlow convolves channels-first only on GPUs")
    tf.config.experimental.enable_tensor_float_32_execution(settings.precision == "tf32")
    tf.keras.mixed_precision.set_global_policy(POLICIES.get(settings.precision, "float32"))
    strategy = tf_strategy.choose(tf, job.replicas, gpus, bool(workers))
    trainer = _Trainer(tf, job, settings, strategy, report, should_stop)
    result = trainer.to_accuracy() if job.data_dir else trainer.throughput()
    if result is not None and task == 0:
        report.result(result)


def _train_gpt(
    tf: Any,
    job: TrainJob,
    gpus: list[Any],
    report: Reporter,
    should_stop: ShouldStop,
    workers: list[str] | None,
    task: int,
) -> None:
    """A GPT model, data-parallel over the strategy's replicas (tf_gpt_train.py)."""
    from dltui.bench.training import tf_gpt_train

    gpu = _first_gpu() if gpus else None
    settings = resolve_gpt(job, gpu[1] if gpu else None, 1)
    tf.keras.mixed_precision.set_global_policy(POLICIES.get(settings.precision, "float32"))
    strategy = tf_strategy.choose(tf, job.replicas, gpus, bool(workers))
    name = gpu[0] if gpu else None
    result = tf_gpt_train.throughput(tf, job, settings, strategy, report, should_stop, name)
    if result is not None and task == 0:
        report.result(result)


class _Trainer:
    def __init__(
        self,
        tf: Any,
        job: TrainJob,
        settings: Settings,
        strategy: Any,
        report: Reporter,
        should_stop: ShouldStop,
    ) -> None:
        self.tf, self.job, self.settings, self.strategy = tf, job, settings, strategy
        self.report, self.should_stop = report, should_stop
        self.replicas = strategy.num_replicas_in_sync
        self.device = "cuda" if tf.config.list_logical_devices("GPU") else "cpu"
        self.size = keras_zoo.image_size(job.model, job.image_size)

    def _network(self, classes: int) -> tuple[Any, Any]:
        """The model and its distributed training step (images, labels) → summed loss."""
        tf, settings, strategy = self.tf, self.settings, self.strategy
        keras = tf.keras
        global_batch = settings.batch * self.replicas
        with strategy.scope():
            model = keras_zoo.build(self.job.model, classes, self.size, settings.channels_last)
            optimizer = keras.optimizers.SGD(
                self.job.learning_rate * global_batch / 256,  # Goyal et al.'s linear scaling
                momentum=MOMENTUM,
                weight_decay=WEIGHT_DECAY,
            )
            if settings.precision == "fp16":
                optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
            # Its slots now, not inside the first step: a tf.function that creates variables
            # is traced twice, and the second trace would land in the timed steps.
            optimizer.build(model.trainable_variables)
        per_image = tf.nn.sparse_softmax_cross_entropy_with_logits
        scaled = settings.precision == "fp16"

        @tf.function(jit_compile=settings.compile)
        def gradients(images: Any, labels: Any) -> tuple[Any, Any]:
            with tf.GradientTape() as tape:
                logits = model(images, training=True)
                losses = per_image(labels=labels, logits=logits)
                loss = tf.nn.compute_average_loss(losses, global_batch_size=global_batch)
                objective = optimizer.scale_loss(loss) if scaled else loss
            return loss, tape.gradient(objective, model.trainable_variables)

        def replica_step(images: Any, labels: Any) -> Any:
            loss, grads = gradients(images, labels)
            optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
            return loss

        @tf.function
        def step(images: Any, labels: Any) -> Any:
            losses = strategy.run(replica_step, args=(images, labels))
            return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

        return model, step

    def _shape(self, count: int) -> tuple[int, ...]:
        size = self.size
        return (count, size, size, 3) if self.settings.channels_last else (count, 3, size, size)

    def throughput(self) -> ModelResult | None:
        tf, job, settings = self.tf, self.job, self.settings
        model, step = self._network(job.classes)
        distribute = self.strategy.experimental_distribute_values_from_function
        images = distribute(lambda _: tf.random.uniform(self._shape(settings.batch), -1.0, 1.0))
        labels = distribute(
            lambda _: tf.random.uniform([settings.batch], 0, job.classes, dtype=tf.int32)
        )
        total = job.warmup + job.steps
        times = []
        for done in range(total):
            if self.should_stop():
                return None
            begin = time.perf_counter()
            float(step(images, labels))  # reading the loss back waits for the device
            if done >= job.warmup:
                times.append(time.perf_counter() - begin)
            self.report.progress((done + 1) / total)
        result = throughput_result(
            job, settings, "tensorflow", self.device, self.replicas, self.size, times
        )
        if self.replicas > 1:  # the one-replica run is the profile
            return result
        # The strategies all-reduce once backward is done: the sizes are the whole story.
        # Backward makes the last layers' gradients first.
        variables = model.trainable_variables[::-1]
        sizes = [v.shape.num_elements() * tf.as_dtype(v.dtype).size for v in variables]
        params = sum(v.shape.num_elements() for v in variables)
        collective = "nccl" if self.device == "cuda" else "tensorflow"
        return replace(
            result, profile=profile.sizes_only(sizes, params, collective, tf_strategy.PACK_BYTES)
        )

    def to_accuracy(self) -> ModelResult | None:
        """Train on the folder, an epoch at a time, until the held-out top-1 reaches the
        target; the clock runs from the first step, evaluation included (as MLPerf counts)."""
        from dltui.bench.training import images as folder

        tf, job, settings, strategy = self.tf, self.job, self.settings, self.strategy
        data = folder.load(job.data_dir or "", self.size, job.holdout)
        model, step = self._network(len(data.classes))
        global_batch = settings.batch * self.replicas
        steps_per_epoch = len(data.train_images) // global_batch
        if steps_per_epoch == 0:
            raise ValueError(
                f"{len(data.train_images)} training images do not fill one step of "
                f"{global_batch} ({self.replicas} × batch {settings.batch}): use a smaller --batch"
            )

        def pixels(images: Any, labels: Any) -> tuple[Any, Any]:
            x = tf.cast(images, tf.float32) / 127.5 - 1.0
            return (x if settings.channels_last else tf.transpose(x, (0, 3, 1, 2))), labels

        train = (
            tf.data.Dataset.from_tensor_slices((data.train_images, data.train_labels))
            .shuffle(len(data.train_images), seed=0, reshuffle_each_iteration=True)
            .batch(global_batch, drop_remainder=True)
            .map(pixels)
        )
        held = tf.data.Dataset.from_tensor_slices((data.holdout_images, data.holdout_labels))
        held = strategy.experimental_distribute_dataset(held.batch(global_batch).map(pixels))
        train = strategy.experimental_distribute_dataset(train)

        @tf.function
        def correct(images: Any, labels: Any) -> Any:
            def replica(images: Any, labels: Any) -> Any:
                predicted = tf.argmax(model(images, training=False), axis=1, output_type=tf.int32)
                return tf.reduce_sum(tf.cast(predicted == tf.cast(labels, tf.int32), tf.int64))

            hits = strategy.run(replica, args=(images, labels))
            return strategy.reduce(tf.distribute.ReduceOp.SUM, hits, axis=None)

        start = time.perf_counter()
        training_s, accuracy, reached, epochs = 0.0, 0.0, None, 0
        for epoch in range(job.max_epochs):
            began = time.perf_counter()
            loss = None
            for index, (images, labels) in enumerate(train):
                if self.should_stop():
                    return None
                loss = step(images, labels)
                self.report.progress((epoch + (index + 1) / steps_per_epoch) / job.max_epochs)
            if loss is not None:
                float(loss)  # the epoch's last step done
            training_s += time.perf_counter() - began
            epochs = epoch + 1
            right = sum(int(correct(images, labels)) for images, labels in held)
            accuracy = right / len(data.holdout_images)
            if accuracy >= (job.target_accuracy or 1.0):
                reached = time.perf_counter() - start
                break
        return accuracy_result(
            job, settings, "tensorflow", self.device, self.replicas, self.size,
            steps_per_epoch * epochs, training_s, reached, accuracy, epochs,
        )  # fmt: skip


def _gpu_memory() -> int | None:
    """The first GPU's memory, from NVML (TensorFlow does not say before it allocates)."""
    found = _first_gpu()
    return found[1] if found else None


def _first_gpu() -> tuple[str, int] | None:
    """The first GPU's name and memory, from NVML; None where it does not say."""
    from dltui.telemetry.nvml import NvmlGateway

    gateway = NvmlGateway()
    gateway.open()
    try:
        gpus = gateway.gpus
        if not gpus or not gpus[0].memory_total:
            return None
        return gpus[0].name, gpus[0].memory_total
    finally:
        gateway.close()
