"""/metrics on a real GPU server: a real agent with NVML, scraped as Prometheus would.

Skipped where NVML sees no GPU. Checks that every GPU is up and that the fields NVML gives on it
are there under their metric names (GPM on Hopper, NVLink only where links are up).
"""

from __future__ import annotations

import pytest

from dltui.telemetry.nvml import NvmlGateway
from tests.agents import metrics_url, one, pick, scrape
from tests.conftest import wait_for

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpus() -> int:
    gateway = NvmlGateway()
    gateway.open()
    count = gateway.count
    gateway.close()
    if count == 0:
        pytest.skip(f"no GPU through NVML: {gateway.error}")
    return count


def test_every_gpu_is_a_target_with_its_fields(agent_factory, gpus):
    agent = agent_factory("--metrics", "127.0.0.1:0")
    url = metrics_url(agent)

    def slow_reads_in() -> object:  # GPM needs two samples, energy is read every 5 s
        series, _ = scrape(url)
        complete = all(pick(series, "dltui_gpu_tensor_active_ratio", gpu=str(gpu))
                       and pick(series, "dltui_gpu_energy_joules_total", gpu=str(gpu))
                       for gpu in range(gpus))  # fmt: skip
        return complete and series

    series = wait_for(slow_reads_in, 30.0, what="GPM and energy for every GPU")
    assert isinstance(series, dict)
    for gpu in map(str, range(gpus)):
        assert one(series, "dltui_gpu_up", gpu=gpu) == 1.0
        assert 20 < one(series, "dltui_gpu_power_watts", gpu=gpu) < 1200
        assert one(series, "dltui_gpu_memory_total_bytes", gpu=gpu) > 1e9
        assert one(series, "dltui_gpu_sm_clock_hertz", gpu=gpu) > 1e8
        assert one(series, "dltui_gpu_energy_joules_total", gpu=gpu) > 0
        assert pick(series, "dltui_gpu_tensor_active_ratio", gpu=gpu)  # GPM: Hopper and later
        links = pick(series, "dltui_gpu_nvlink_transmit_bytes_per_second", gpu=gpu)
        assert bool(links) == (gpus > 1)  # a one-GPU H200 answers NotSupported to NVLink
