"""A plan on "auto" never runs on the CPU of a GPU server unnoticed.

"auto" means the GPUs where the framework can use them, else the CPU; on a server whose NVML
reports GPUs, falling back means the framework cannot reach them (a CPU-only build, a driver it
does not match, CUDA_VISIBLE_DEVICES empty), and a result measured on the CPU would pass for the
GPUs'. So the job is refused with why, and how to choose the CPU on purpose.
"""

from __future__ import annotations

import os

from dltui.formatting import counted
from dltui.plans.names import NVML_GPUS_ENV


class NoCuda(RuntimeError):
    """The server has GPUs the plan's framework cannot use: the job is refused, not run."""


def reported_gpus() -> int:
    """The GPUs the agent's NVML reports (0 when it does not say)."""
    text = os.environ.get(NVML_GPUS_ENV, "")
    return int(text) if text.isdigit() else 0


def check_auto(framework: str, device: str) -> None:
    """Raise NoCuda when `device` is "auto", NVML reports GPUs and `framework` sees none."""
    gpus = reported_gpus()
    if device != "auto" or gpus == 0:
        return
    why = _torch_problem() if framework == "torch" else _tensorflow_problem()
    if why is not None:
        raise NoCuda(
            f"this server has {counted(gpus, 'GPU')} but {why}; "
            "install a CUDA build, or choose the CPU on purpose (device cpu)"
        )


def _torch_problem() -> str | None:
    import torch

    if torch.cuda.is_available():
        return None
    if torch.version.cuda is None:
        return f"PyTorch {torch.__version__} was built without CUDA"
    return f"PyTorch {torch.__version__} (CUDA {torch.version.cuda}) sees no GPU"


def _tensorflow_problem() -> str | None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    if tf.config.list_physical_devices("GPU"):
        return None
    if not tf.test.is_built_with_cuda():
        return f"TensorFlow {tf.__version__} was built without CUDA"
    return f"TensorFlow {tf.__version__} sees no GPU"
