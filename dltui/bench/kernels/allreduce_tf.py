"""All-reduce through tf.distribute (bench/tf_strategy.py chooses the strategy). Runs in a rank
process of its own (see allreduce.py): TensorFlow's devices and its cluster (TF_CONFIG) must be
set before it initializes.
"""

from __future__ import annotations

import os
from typing import Any

from dltui.bench import tf_strategy
from dltui.bench.kernels.allreduce import (
    AllReduceJob,
    allreduce_result,
    timed_count,
    wall_times,
)
from dltui.bench.ranks import OnResult, ShouldStop
from dltui.bench.shapes import AllReduceCase
from dltui.bench.timing import Budget
from dltui.plans.names import MULTICAST_OFF


def tensorflow_allreduce(
    job: AllReduceJob,
    on_result: OnResult,
    should_stop: ShouldStop,
    workers: list[str] | None = None,
    task: int = 0,
) -> None:
    """Time TensorFlow's all-reduce in replica context, as training uses it.

    Across servers, `workers` is every server's HOST:PORT and `task` this one's index; worker 0
    reports.

    Each replica's buffer is a per-replica variable filled once with replica+1, so a call times
    the collective alone; each call is waited for by fetching one float per replica.
    """
    os.environ.update(MULTICAST_OFF)
    tf, gpus = tf_strategy.start(job.device, workers, task)
    strategy = tf_strategy.choose(tf, job.ranks, gpus, bool(workers))
    replicas = strategy.num_replicas_in_sync
    local = tf.VariableSynchronization.ON_READ
    with strategy.scope():
        flag = tf.Variable(0.0, trainable=False, synchronization=local,
                           aggregation=tf.VariableAggregation.SUM)  # fmt: skip

    @tf.function
    def agreed_sum(value: Any) -> Any:
        """Σ over replicas of `value`: the ranks agree on a stop or on a loop length."""

        def replica() -> Any:
            flag.assign(value)
            return tf.distribute.get_replica_context().all_reduce("sum", flag.read_value())

        return strategy.run(replica)

    def agree(value: float) -> float:
        results = strategy.experimental_local_results(agreed_sum(tf.constant(value)))
        return float(results[0].numpy())

    for floats in job.floats:
        if agree(float(should_stop())) > 0:
            break  # any worker asked: all stop at the same size
        with strategy.scope():
            buffer = tf.Variable(tf.zeros([floats]), trainable=False, synchronization=local,
                                 aggregation=tf.VariableAggregation.SUM)  # fmt: skip

        @tf.function
        def fill(buffer: Any = buffer) -> None:
            def replica() -> None:
                rank = tf.distribute.get_replica_context().replica_id_in_sync_group
                buffer.assign(tf.fill(tf.shape(buffer), tf.cast(rank + 1, tf.float32)))

            strategy.run(replica)

        @tf.function
        def all_reduce(buffer: Any = buffer) -> Any:
            def replica() -> Any:
                ctx = tf.distribute.get_replica_context()
                total = ctx.all_reduce(tf.distribute.ReduceOp.SUM, buffer.read_value())
                return total[0], tf.reduce_all(total == total[0])

            return strategy.run(replica)

        def step() -> list[Any]:
            firsts, uniform = all_reduce()
            return [(f.numpy(), u.numpy()) for f, u in zip(
                strategy.experimental_local_results(firsts),
                strategy.experimental_local_results(uniform), strict=True)]  # fmt: skip

        fill()
        expected = replicas * (replicas + 1) / 2
        if not all(first == expected and same for first, same in step()):
            raise RuntimeError(f"all-reduce of {floats} floats is wrong: expected {expected}")
        times = _timed(step, job.budget(bool(gpus)), agree)
        if task == 0:
            device = "cuda" if gpus else "cpu"
            case = AllReduceCase(floats)
            on_result(allreduce_result(job, "allreduce", case, device, replicas, times))
    tf_strategy.leave_together(workers, task, job.timeout_s)


def _timed(step: Any, budget: Budget, agree: Any) -> list[float]:
    """Per-call seconds over a loop of the same length on every worker: a worker that ran one
    collective more than the others would wait for them forever. The length fits max_seconds
    by the sum of the replicas' per-call estimates (at least any one's)."""
    count = timed_count(step, lambda: None, budget, lambda values: [agree(values[0])])
    return wall_times(step, count)
