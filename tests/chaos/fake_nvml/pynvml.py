"""A stand-in for nvidia-ml-py for agents under test: put this folder first on an agent's
PYTHONPATH and `import pynvml` finds the unit tests' FakeNvml, with faults from the
DLTUI_FAKE_NVML environment variable (JSON), e.g.

    {"gpus": [{}, {"faults": {"nvmlDeviceGetPowerUsage": "NotSupported"}},
              {"hangs": ["nvmlDeviceGetMemoryInfo"]}]}

`faults` raise the named NVMLError on every call; `hangs` never return; `"gpm": true` gives a
GPU GPM metrics, as an H200 has. Production code has no
hook for this: the agent imports pynvml as always and gets this module.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from tests.unit import test_telemetry_nvml as fake

_spec = json.loads(os.environ.get("DLTUI_FAKE_NVML", '{"gpus": [{}]}'))
_gpus = [
    fake.FakeGpu(
        uuid=f"GPU-{index}",
        gpm=bool(gpu.get("gpm", False)),
        faults={
            name: getattr(fake, f"NVMLError_{error}")()
            for name, error in gpu.get("faults", {}).items()
        },
    )
    for index, gpu in enumerate(_spec["gpus"])
]
_nvml = fake.FakeNvml(_gpus)
_never = threading.Event()


def _hanging(name: str, gpu: fake.FakeGpu) -> None:
    original = getattr(_nvml, name)

    def call(handle: Any, *args: Any) -> Any:
        if handle is gpu:
            _never.wait()
        return original(handle, *args)

    setattr(_nvml, name, call)


for _gpu, _gpu_spec in zip(_gpus, _spec["gpus"], strict=True):
    for _name in _gpu_spec.get("hangs", []):
        _hanging(_name, _gpu)


def __getattr__(name: str) -> Any:
    return getattr(_nvml, name)
