"""The NVML gateway on this machine's real nvidia-ml-py: it never raises, with a GPU or without."""

from __future__ import annotations

from dltui.telemetry.nvml import NvmlGateway


def test_real_pynvml_never_raises() -> None:
    gateway = NvmlGateway()
    gateway.open()
    if gateway.count == 0:  # this machine: no driver
        assert gateway.error
    else:
        assert gateway.error is None and len(gateway.read_fast()) == gateway.count
    gateway.close()
