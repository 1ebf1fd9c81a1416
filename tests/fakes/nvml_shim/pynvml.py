"""A stand-in for nvidia-ml-py for agents under test: put this folder first on an agent's
PYTHONPATH and `import pynvml` finds the unit tests' FakeNvml (with ops.py's health, XID,
process and MIG calls), set up from the DLTUI_FAKE_NVML environment variable (JSON), e.g.

    {"gpus": [{}, {"faults": {"nvmlDeviceGetPowerUsage": "NotSupported"}},
              {"hangs": ["nvmlDeviceGetMemoryInfo"]},
              {"pcie": [4, 8], "remapped": [0, 1, 1, 0], "mig": ["1g.18gb", "3g.71gb"]}],
     "contexts": "/tmp/held", "control": "/tmp/control.jsonl"}

`faults` raise the named NVMLError on every call; `hangs` never return (a top-level `hung` path
is touched as one begins); `pcie`, `replay`, `retired`, `remapped`, `nvlink_errors` and
`utilization` set a GPU's health (ops.GpuHealth), `mig` splits it into instances of those
profiles, `"gpm": true` gives it GPM metrics (as an H200 has), `processes` lists [pid, bytes]
pairs, `name` is what NVML calls it.
`{"topology": "nvlink8"}` (or "pcie8") is one of the 8-GPU servers of boxes.py instead.
`contexts` names a folder where processes say they hold a GPU context (ops.hold_context).
`control` names a file a test appends JSON lines to while the agent runs:
`{"gpu": 0, "set": {"temp": 90}}` changes a FakeGpu or GpuHealth attribute,
`{"gpu": 0, "xid": 79}` raises an XID. Production code has no hook for this: the agent imports
pynvml as always and gets this module.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from tests.fakes import nvml as fake
from tests.fakes.boxes import BOXES, TopologyNvml
from tests.fakes.nvml_ops import OpsCalls, mig_instances

CONTROL_POLL_S = 0.02
_HEALTH_KEYS = ("pcie", "pcie_max", "replay", "retired", "remapped", "nvlink_errors")


class _Nvml(OpsCalls, fake.FakeNvml):
    pass


class _BoxNvml(OpsCalls, TopologyNvml):
    pass


_spec = json.loads(os.environ.get("DLTUI_FAKE_NVML", '{"gpus": [{}]}'))
_nvml: fake.FakeNvml
if "topology" in _spec:
    _nvml = _BoxNvml(BOXES[_spec["topology"]](), contexts=_spec.get("contexts"))
    _spec["gpus"] = [{} for _ in _nvml.gpus]
else:
    _nvml = _Nvml(
        [
            fake.FakeGpu(
                uuid=f"GPU-{index}",
                name=gpu.get("name", fake.FakeGpu.name),
                gpm=bool(gpu.get("gpm", False)),
                faults={
                    name: getattr(fake, f"NVMLError_{error}")()
                    for name, error in gpu.get("faults", {}).items()
                },
                processes=[tuple(pair) for pair in gpu.get("processes", [])],
            )
            for index, gpu in enumerate(_spec["gpus"])
        ],
        contexts=_spec.get("contexts"),
    )
_gpus = _nvml.gpus
_never = threading.Event()


def _hanging(name: str, gpu: fake.FakeGpu) -> None:
    original = getattr(_nvml, name)

    def call(handle: Any, *args: Any) -> Any:
        if handle is gpu:
            if "hung" in _spec:  # for a test that waits until the hang has begun
                Path(_spec["hung"]).touch()
            _never.wait()
        return original(handle, *args)

    setattr(_nvml, name, call)


def _set(gpu: int, changes: dict[str, Any]) -> None:
    health = _nvml.health[gpu]
    for name, value in changes.items():
        if name in _HEALTH_KEYS:
            setattr(health, name, tuple(value) if isinstance(value, list) else value)
        elif name == "utilization":
            health.utilization = {int(pid): tuple(pair) for pid, pair in value.items()}
        else:
            setattr(_gpus[gpu], name, tuple(value) if isinstance(value, list) else value)


def _follow(path: Path) -> None:
    """Apply the control file's lines as they are appended."""
    done = 0
    while True:
        try:
            lines = path.read_text().splitlines()
        except OSError:
            lines = []
        for line in lines[done:]:
            if not line.endswith("}"):
                break  # half written: next time
            command = json.loads(line)
            if "xid" in command:
                _nvml.inject_xid(command["gpu"], command["xid"])
            _set(command["gpu"], command.get("set", {}))
            done += 1
        time.sleep(CONTROL_POLL_S)  # ok: the control file is polled, as the sampler polls NVML


for _index, (_gpu, _gpu_spec) in enumerate(zip(_gpus, _spec["gpus"], strict=True)):
    for _name in _gpu_spec.get("hangs", []):
        _hanging(_name, _gpu)
    _set(
        _index, {key: _gpu_spec[key] for key in (*_HEALTH_KEYS, "utilization") if key in _gpu_spec}
    )
    _nvml.health[_index].mig = mig_instances(_gpu, _gpu_spec.get("mig", []))
if "control" in _spec:
    threading.Thread(target=_follow, args=(Path(_spec["control"]),), daemon=True).start()


def __getattr__(name: str) -> Any:
    return getattr(_nvml, name)
