"""The CNN zoo's facts that do not need a framework: names, default batches, sizes.

The networks themselves are in torch_zoo.py (torchvision's architectures) and keras_zoo.py
(keras.applications, and GoogLeNet and AlexNet as tf_cnn_benchmarks defines them). Both import
their framework at call time, in the worker's rank processes only.
"""

from __future__ import annotations

from dltui.plans import gpt
from dltui.plans.sizing import CPU_BATCH

TF_CNN_BATCH = {"resnet50": 64, "vgg16": 64, "googlenet": 32, "alexnet": 512, "resnet20": 128}
"""tf_cnn_benchmarks' default batch per GPU: comparable with its published figures, and the
least a GPU gets (ResNet-20: its paper's CIFAR batch)."""

GPU_BATCH = {"resnet50": 1024, "vgg16": 256, "googlenet": 1024, "alexnet": 2048, "resnet20": 1024}
"""The default batch per GPU on an H200 (141 GB): the fastest measured, bf16 and compiled
(docs/results/models-h200.md). A GPU with less memory gets it scaled down (`default_batch`)."""
H200_MEMORY = 141 * 10**9


SGD_LEARNING_RATE = 0.1
"""The CNNs': SGD with momentum, for a global batch of 256 (scaled linearly with it)."""


def learning_rate(model: str) -> float:
    """A model's learning rate where the plan gives none: the CNNs' SGD rate, or the GPT
    model's AdamW rate (GPT-3's for its sizes; a tiny model's larger)."""
    return gpt.LEARNING_RATE[model] if gpt.is_gpt(model) else SGD_LEARNING_RATE


def default_batch(model: str, gpu_memory: int | None) -> int:
    """A CPU's batch on a CPU (gpu_memory None: a step of a second or two); on a GPU the
    H200's, halved until it fits the GPU's share of memory, but never below
    tf_cnn_benchmarks'."""
    if gpu_memory is None:
        return CPU_BATCH[model]
    floor = TF_CNN_BATCH[model]
    batch = GPU_BATCH[model]
    while batch > floor and batch * H200_MEMORY > GPU_BATCH[model] * gpu_memory:
        batch //= 2
    return max(batch, floor)


INCEPTION_V1 = {
    "3a": (64, 96, 128, 16, 32, 32), "3b": (128, 128, 192, 32, 96, 64),
    "4a": (192, 96, 208, 16, 48, 64), "4b": (160, 112, 224, 24, 64, 64),
    "4c": (128, 128, 256, 24, 64, 64), "4d": (112, 144, 288, 32, 64, 64),
    "4e": (256, 160, 320, 32, 128, 128),
    "5a": (256, 160, 320, 32, 128, 128), "5b": (384, 192, 384, 48, 128, 128),
}  # fmt: skip
"""GoogLeNet's inception modules, from Szegedy et al.: (1×1, 3×3 reduce, 3×3, 5×5 reduce,
5×5, pool projection) filters. A max-pool comes before 4a and 5a."""
