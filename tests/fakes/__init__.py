"""Stand-ins the tests share: a fake pynvml (nvml.py) with the health, XID, process and MIG
calls of nvml_ops.py and the 8-GPU servers of boxes.py; nvml_shim/, a folder whose pynvml.py
an agent under test imports instead of nvidia-ml-py. Tests import fakes from here, and never
from another test module."""

from __future__ import annotations

from pathlib import Path

NVML_SHIM = Path(__file__).parent / "nvml_shim"
"""Put first on an agent's PYTHONPATH: its `import pynvml` gets the fake (see pynvml.py)."""
