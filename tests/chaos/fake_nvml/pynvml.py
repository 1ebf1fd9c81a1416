"""A stand-in for nvidia-ml-py for agents under test: put this folder first on an agent's
PYTHONPATH and `import pynvml` finds the unit tests' FakeNvml, with faults from the
DLTUI_FAKE_NVML environment variable (JSON), e.g.

    {"gpus": [{}, {"faults": {"nvmlDeviceGetPowerUsage": "NotSupported"}},
              {"hangs": ["nvmlDeviceGetMemoryInfo"]}]}

`faults` raise the named NVMLError on every call; `hangs` never return. `{"topology":
"nvlink8"}` (or "pcie8") is one of the 8-GPU servers of boxes.py instead. Production code has no
hook for this: the agent imports pynvml as always and gets this module.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from tests.chaos.fake_nvml.boxes import BOXES, TopologyNvml
from tests.unit import test_telemetry_nvml as fake

_spec = json.loads(os.environ.get("DLTUI_FAKE_NVML", '{"gpus": [{}]}'))
_nvml: fake.FakeNvml
if "topology" in _spec:
    _nvml = TopologyNvml(BOXES[_spec["topology"]]())
    _spec["gpus"] = [{} for _ in _nvml.gpus]
else:
    _nvml = fake.FakeNvml(
        [
            fake.FakeGpu(
                uuid=f"GPU-{index}",
                faults={
                    name: getattr(fake, f"NVMLError_{error}")()
                    for name, error in gpu.get("faults", {}).items()
                },
            )
            for index, gpu in enumerate(_spec["gpus"])
        ]
    )
_gpus = _nvml.gpus
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
