"""A real Prometheus server (Debian's package) scrapes a real agent on loopback: its HTTP API
answers with the host's and the fake NVML GPUs' series, at the values the agent served, and a
benchmark run on the CPU shows up as dltui_bench_*."""

from __future__ import annotations

import socket

import psutil
import pytest

from dltui.protocol.messages import JobEnd, JobResult, Run
from tests.agents import TINY, connect, metrics_url, until
from tests.conftest import ROOT, require, wait_for
from tests.prometheus import PrometheusServer, tool, values


async def test_prometheus_scrapes_an_agent(agent_factory, fake_gpus, tmp_path):
    tool("prometheus")
    require("torch")

    fake_gpus([{"gpm": True}, {"faults": {"nvmlDeviceGetUtilizationRates": "GpuIsLost"}}])
    agent = agent_factory("--metrics", "127.0.0.1:0")
    target = metrics_url(agent).split("//")[1].split("/")[0]
    prometheus = PrometheusServer(tmp_path / "prometheus", [
        {"job_name": "dltui", "static_configs": [{"targets": [target]}]},
    ], rule_files=(ROOT / "agents/prometheus/dltui-alerts.yml",))  # fmt: skip
    try:
        up = prometheus.wait_for_series('up{job="dltui"} == 1')
        assert up[0]["metric"]["instance"] == target
        host = socket.gethostname()
        memory = prometheus.wait_for_series(f'dltui_host_memory_total_bytes{{hostname="{host}"}}')
        assert values(memory, "hostname") == {host: psutil.virtual_memory().total}
        power = values(prometheus.wait_for_series("dltui_gpu_power_watts"), "gpu")
        assert power == {"0": 75.0}  # GPU 1 is lost: no power series, but an up of 0
        assert values(prometheus.query("dltui_gpu_up"), "gpu") == {"0": 1.0, "1": 0.0}
        clock = prometheus.query('dltui_gpu_sm_clock_hertz{uuid="GPU-0", name="NVIDIA H200"}')
        assert values(clock, "gpu") == {"0": 1980e6}
        assert prometheus.query('dltui_gpu_energy_joules_total{gpu="0"}')  # a counter
        assert prometheus.query('dltui_gpu_throttle_reason{gpu="0", reason="idle"} == 1')
        lost = wait_for(lambda: [a for a in prometheus.alerts() if a["labels"]["alertname"]
                                 == "DltuiGpuLost"], what="the shipped GPU-lost alert")  # fmt: skip
        assert [(a["labels"]["gpu"], a["state"]) for a in lost] == [("1", "pending")]  # for: 1m

        client, _ = await connect(agent.address)
        await client.stream.send(Run(1, "cpu-gemm", TINY))
        seen: list = []
        await until(client.stream, lambda m: isinstance(m, JobEnd), collect=seen)
        await client.close()
        results = [m.result for m in seen if isinstance(m, JobResult) and m.result]
        served = {r.shape: r.tflops for r in results if r.tflops is not None}
        tflops = prometheus.wait_for_series('dltui_bench_tflops{kind="gemm", device="cpu"}')
        assert values(tflops, "case") == pytest.approx(served)
        ended = prometheus.wait_for_series('dltui_jobs_ended_total{state="done"}')
        assert values(ended, "state") == {"done": 1.0}
    finally:
        prometheus.stop()
