"""The CNN zoo's facts that do not need a framework: names, default batches, sizes.

The networks themselves are in torch_zoo.py (torchvision's architectures) and keras_zoo.py
(keras.applications, and GoogLeNet and AlexNet as tf_cnn_benchmarks defines them). Both import
their framework at call time, in the worker's rank processes only.
"""

from __future__ import annotations

TF_CNN_BATCH = {"resnet50": 64, "vgg16": 64, "googlenet": 32, "alexnet": 512}
"""tf_cnn_benchmarks' default batch per GPU: comparable with its published figures, and small
enough for a CPU run."""

GPU_BATCH = {"resnet50": 1024, "vgg16": 256, "googlenet": 1024, "alexnet": 2048}
"""The default batch per GPU on an H200 (141 GB): the fastest measured, bf16 and compiled
(docs/results/models-h200.md). A GPU with less memory gets it scaled down (`default_batch`)."""
H200_MEMORY = 141 * 10**9

MIN_IMAGE = {"resnet50": 32, "vgg16": 32, "googlenet": 32, "alexnet": 67}
"""The smallest image each network takes: AlexNet's three unpadded max-pools need 67 pixels."""


def default_batch(model: str, gpu_memory: int | None) -> int:
    """tf_cnn_benchmarks' batch on a CPU (gpu_memory None); on a GPU the H200's, halved until
    it fits the GPU's share of memory, but never below tf_cnn_benchmarks'."""
    floor = TF_CNN_BATCH[model]
    if gpu_memory is None:
        return floor
    batch = GPU_BATCH[model]
    while batch > floor and batch * H200_MEMORY > GPU_BATCH[model] * gpu_memory:
        batch //= 2
    return max(batch, floor)
