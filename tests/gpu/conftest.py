"""The real NVML, opened once per module by the tests that read it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dltui.telemetry.nvml import NvmlGateway


@pytest.fixture(scope="module")
def gateway() -> Iterator[NvmlGateway]:
    gateway = NvmlGateway()
    gateway.open()
    if gateway.count == 0:
        pytest.skip(f"no GPU through NVML: {gateway.error}")
    yield gateway
    gateway.close()
