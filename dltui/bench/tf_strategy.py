"""Which tf.distribute strategy runs a TensorFlow job: one choice for all-reduce and training.

One server: MirroredStrategy over the first N GPUs with NCCL, or the CPU split into N logical
devices with ReductionToOneDevice (NCCL needs GPUs; HierarchicalCopyAllReduce assumes a GPU
topology). Across servers (TF_CONFIG set by the caller): MultiWorkerMirroredStrategy, NCCL
between GPUs or its ring on CPUs. Call it before TensorFlow runs its first operation: logical
devices can only be configured before the runtime starts.
"""

from __future__ import annotations

import json
import os
from typing import Any

from dltui.bench.cpus import usable_cpus
from dltui.plans.names import DDP_BUCKET_BYTES

PACK_BYTES = DDP_BUCKET_BYTES
"""Gradients all-reduced together across servers, at most: DDP's bucket cap."""
CPU_REPLICAS = 2
"""Replicas on a server without GPUs when the job asks for "all"."""


def start(device: str, workers: list[str] | None, task: int) -> tuple[Any, list[Any]]:
    """Import TensorFlow for a job on `device` ("auto", "cuda", "cpu"), as one worker of
    `workers` (every server's HOST:PORT; None on one server); returns it and the GPUs it uses."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if workers:
        cluster = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": task}}
        os.environ["TF_CONFIG"] = json.dumps(cluster)
    import tensorflow as tf

    threads = usable_cpus()  # a quota of fewer CPUs than the machine has (a container's)
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    if device == "cpu":
        tf.config.set_visible_devices([], "GPU")
    gpus = tf.config.list_physical_devices("GPU")
    if device == "cuda" and not gpus:
        raise RuntimeError("TensorFlow sees no GPU")
    return tf, gpus


def choose(tf: Any, replicas: int, gpus: list[Any], across_servers: bool) -> Any:
    """`replicas` per server, 0 meaning every GPU (or CPU_REPLICAS CPU devices)."""
    if across_servers:
        kinds = tf.distribute.experimental.CommunicationImplementation
        # Packs of a set size, not TensorFlow's own choice, so the step profile can say how
        # the gradients travel (dltui predict); DDP's bucket size.
        options = tf.distribute.experimental.CommunicationOptions(
            bytes_per_pack=PACK_BYTES, implementation=kinds.NCCL if gpus else kinds.RING
        )
        return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    count = replicas or len(gpus) or CPU_REPLICAS
    if gpus and count > len(gpus):
        raise RuntimeError(f"the plan asks for {count} GPUs; TensorFlow sees {len(gpus)}")
    if gpus:
        devices = [f"/gpu:{index}" for index in range(count)]
        return tf.distribute.MirroredStrategy(
            devices, cross_device_ops=tf.distribute.NcclAllReduce()
        )
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)]
    )
    devices = [f"/cpu:{index}" for index in range(count)]
    return tf.distribute.MirroredStrategy(
        devices, cross_device_ops=tf.distribute.ReductionToOneDevice()
    )


def leave_together(workers: list[str] | None, task: int, timeout_s: float) -> None:
    """Across servers, end so that no worker goes while another may still need it. A
    collective's receiver pulls each part from its sender, so no worker may leave before all
    are done; and worker 0 hosts the coordination service, so it leaves last. Each worker says
    it is done in the service's key-value store; each other worker waits for every worker's
    word, then says it is leaving; worker 0 waits for those. (A barrier would not do: worker 0
    could exit before the others had heard that it was passed.)

    The last word can lose its answer the same way: the service hands the key to worker 0's
    wait before it answers the worker that set it, and worker 0 may exit in between (seen
    once in ten suite runs on a loaded 2-core machine: "UnavailableError: Socket closed" on
    worker 1). By then every worker's work is done, so a worker that loses the service while
    saying it leaves has lost nothing; had the word not arrived, worker 0 would say so."""
    if not workers:
        return
    from tensorflow.python.eager import context  # the coordination service has no public API
    from tensorflow.python.framework import errors

    store, wait_ms = context.context(), int(timeout_s * 1000)
    others = [other for other in range(len(workers)) if other != task]
    store.set_config_key_value(f"dltui/done/{task}", "1")
    if task == 0:
        for other in others:
            store.get_config_key_value(f"dltui/left/{other}", wait_ms)
        return
    for other in others:
        store.get_config_key_value(f"dltui/done/{other}", wait_ms)
    try:
        store.set_config_key_value(f"dltui/left/{task}", "1")
    except errors.UnavailableError:
        pass  # worker 0 took the word and left before its service answered
