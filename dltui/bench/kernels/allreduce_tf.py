"""All-reduce through tf.distribute's MirroredStrategy on one server. Runs in a rank process of
its own (see allreduce.py): TensorFlow's logical devices must be set before it initializes.
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any

from dltui.bench.backends import wall_clock_times
from dltui.bench.kernels.allreduce import MULTICAST_OFF, AllReduceJob, _result
from dltui.bench.ranks import OnResult, ShouldStop
from dltui.bench.shapes import AllReduceCase


def tensorflow_allreduce(job: AllReduceJob, on_result: OnResult, should_stop: ShouldStop) -> None:
    """Time TensorFlow's all-reduce in replica context, as training uses it.

    One server: MirroredStrategy over the local GPUs with NCCL, or the CPU split into logical
    devices with ReductionToOneDevice (NCCL needs GPUs; HierarchicalCopyAllReduce assumes a GPU
    topology).

    Each call is waited for by fetching one float per replica, so small sizes include
    TensorFlow's per-call dispatch, as a training step would.
    """
    os.environ.update(MULTICAST_OFF)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    if job.device == "cpu":
        tf.config.set_visible_devices([], "GPU")
    gpus = tf.config.list_physical_devices("GPU")
    if job.device == "cuda" and not gpus:
        raise RuntimeError("TensorFlow sees no GPU")
    ranks = job.ranks or len(gpus) or 2
    if gpus and ranks > len(gpus):
        raise RuntimeError(f"the plan asks for {ranks} GPUs; TensorFlow sees {len(gpus)}")
    if gpus:
        devices = [f"/gpu:{index}" for index in range(ranks)]
        reduction: Any = tf.distribute.NcclAllReduce()
    else:
        cpu = tf.config.list_physical_devices("CPU")[0]
        logical = [tf.config.LogicalDeviceConfiguration() for _ in range(ranks)]
        tf.config.set_logical_device_configuration(cpu, logical)
        devices = [f"/cpu:{index}" for index in range(ranks)]
        reduction = tf.distribute.ReductionToOneDevice()
    strategy = tf.distribute.MirroredStrategy(devices, cross_device_ops=reduction)
    replicas = strategy.num_replicas_in_sync

    def replica_input(floats: int, context: Any) -> Any:
        replica = context.replica_id_in_sync_group
        with tf.device(devices[replica]):
            return tf.fill([floats], float(replica + 1))

    def replica_step(value: Any) -> tuple[Any, Any]:
        total = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, value)
        return total, total[0]

    @tf.function
    def all_reduce(values: Any) -> Any:
        return strategy.run(replica_step, args=(values,))

    def step(values: Any) -> tuple[Any, ...]:
        totals, firsts = all_reduce(values)
        for first in strategy.experimental_local_results(firsts):
            first.numpy()
        return strategy.experimental_local_results(totals)

    for floats in job.floats:
        if should_stop():
            break
        values = strategy.experimental_distribute_values_from_function(
            partial(replica_input, floats)
        )
        expected = replicas * (replicas + 1) / 2
        if not all(tf.reduce_all(total == expected) for total in step(values)):
            raise RuntimeError(f"all-reduce of {floats} floats is wrong: expected {expected}")
        times = wall_clock_times(partial(step, values), lambda: None, job.budget(bool(gpus)))
        on_result(_result(job, AllReduceCase(floats), "cuda" if gpus else "cpu", replicas, times))
