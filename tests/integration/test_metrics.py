"""`dltui agent --metrics`: a real agent with the suite's fake NVML, scraped as Prometheus would
(OpenMetrics asked for, parsed with prometheus-client's own parser). The values are the ones
the agent streams to its clients; a lost or hung GPU is `dltui_gpu_up 0`, answered at once; an
unsupported field is absent; benchmark results and the agent's own health are metrics too."""

from __future__ import annotations

import asyncio
import http.client
import re
import socket
import time
import urllib.parse
import urllib.request
from http import HTTPStatus
from pathlib import Path

import psutil
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from dltui.protocol.bench_plans import ModelPlan
from dltui.protocol.bench_results import ModelResult
from dltui.protocol.fields import THROTTLE_REASONS
from dltui.protocol.messages import JobEnd, JobResult, Run, Sample, Subscribe
from dltui.protocol.metric_names import field_metrics, model_points
from tests.agents import (
    OPENMETRICS,
    TINY,
    Series,
    connect,
    metrics_url,
    next_samples,
    one,
    pick,
    scrape,
    until,
)
from tests.conftest import require, wait_for


async def test_the_metrics_are_the_values_the_agent_streams(agent_factory, fake_gpus):
    fake_gpus([{"gpm": True}, {}])
    agent = agent_factory("--metrics", "127.0.0.1:0")
    client, welcome = await connect(agent.address)
    await client.stream.send(Subscribe(1, 10.0))
    # GPM's first rate comes a GPM interval after its first sample.
    sample = await until(client.stream, lambda message: isinstance(message, Sample)
                         and "tensor_active" in message.gpus[0].values, timeout=30)  # fmt: skip
    await client.close()
    series, text = scrape(metrics_url(agent))
    host = welcome.inventory.hostname
    for field in sample.host.values:  # each tick's own values differ: all there, and one known
        spec = field_metrics("host").get(field)
        assert spec is not None and pick(series, spec.sample_name, hostname=host)
    assert one(series, "dltui_host_memory_total_bytes") == psutil.virtual_memory().total
    for gpu in sample.gpus:
        info = welcome.inventory.gpus[gpu.index]
        labels = {"hostname": host, "gpu": str(gpu.index), "uuid": info.uuid, "name": info.name}
        assert one(series, "dltui_gpu_up", **labels) == 1.0
        for field, value in gpu.values.items():
            if (gpu_spec := field_metrics("gpu").get(field)) is not None:
                assert one(series, gpu_spec.sample_name, **labels) == pytest.approx(
                    value * gpu_spec.scale
                )
        reasons = pick(series, "dltui_gpu_throttle_reason", **labels)
        assert len(reasons) == len(THROTTLE_REASONS)
        assert one(series, "dltui_gpu_throttle_reason", reason="idle", **labels) == 1.0  # 0x1
    assert one(series, "dltui_gpu_power_watts", gpu="0") == 75.0  # the fake's 75,000 mW
    assert one(series, "dltui_gpu_sm_clock_hertz", gpu="0") == 1980e6
    assert one(series, "dltui_gpu_energy_joules_total", gpu="0") == 0.0  # a counter
    assert "# TYPE dltui_gpu_energy_joules counter" in text
    assert "# UNIT dltui_gpu_power_watts watts" in text
    assert pick(series, "dltui_gpu_tensor_active_ratio", gpu="0")  # GPM on GPU 0 only:
    assert not pick(series, "dltui_gpu_tensor_active_ratio", gpu="1")  # absent, not 0
    assert one(series, "dltui_agent_info", hostname=host) == 1.0
    assert one(series, "process_resident_memory_bytes") > 10e6
    assert one(series, "process_cpu_seconds_total") > 0


def test_a_lost_gpu_is_down_and_an_unsupported_field_absent(agent_factory, fake_gpus):
    fake_gpus([{"faults": {"nvmlDeviceGetPowerUsage": "NotSupported"}},
               {"faults": {"nvmlDeviceGetUtilizationRates": "GpuIsLost"}},
               {"faults": {"nvmlDeviceGetTemperature": "Unknown"}}])  # fmt: skip
    agent = agent_factory("--metrics", "127.0.0.1:0")
    url = metrics_url(agent)
    series = wait_for(lambda: (s := scrape(url)[0]) and pick(s, "dltui_gpu_up") and s)
    assert one(series, "dltui_gpu_up", gpu="0") == 1.0
    assert not pick(series, "dltui_gpu_power_watts", gpu="0")  # NotSupported: no series
    assert one(series, "dltui_gpu_temperature_celsius", gpu="0") == 30.0
    assert one(series, "dltui_gpu_up", gpu="1") == 0.0
    assert not [key for (name, key) in series if ("gpu", "1") in key and name != "dltui_gpu_up"]
    assert one(series, "dltui_gpu_up", gpu="2") == 1.0  # an error this tick is not a lost GPU
    assert not pick(series, "dltui_gpu_temperature_celsius", gpu="2")
    assert one(series, "dltui_agent_nvml_errors_total",
               call="nvmlDeviceGetTemperature") >= 1  # fmt: skip
    assert not pick(series, "dltui_agent_nvml_errors_total", call="nvmlDeviceGetPowerUsage")


def test_a_scrape_during_an_nvml_hang_answers_at_once_with_the_gpu_down(agent_factory, fake_gpus):
    fake_gpus([{}, {"hangs": ["nvmlDeviceGetClockInfo"]}])  # never returns, for GPU 1
    agent = agent_factory("--metrics", "127.0.0.1:0")
    url = metrics_url(agent)
    wait_for(lambda: pick(scrape(url)[0], "dltui_gpu_up", gpu="1"), what="GPU 1 in a scrape")
    for _ in range(5):
        began = time.monotonic()
        series, _ = scrape(url, timeout=2.0)
        assert time.monotonic() - began < 1.0
        assert one(series, "dltui_gpu_up", gpu="1") == 0.0
        assert one(series, "dltui_gpu_up", gpu="0") == 1.0
        assert one(series, "dltui_gpu_power_watts", gpu="0") == 75.0


async def test_benchmark_results_and_progress_are_metrics(agent_factory):
    require("torch")

    agent = agent_factory("--metrics", "127.0.0.1:0")
    url = metrics_url(agent)
    series, _ = scrape(url)
    assert one(series, "dltui_job_running") == 0.0
    client, _ = await connect(agent.address)
    await client.stream.send(Run(1, "job1", TINY))
    seen: list = []
    end = await until(client.stream, lambda m: isinstance(m, JobEnd), collect=seen)
    await client.close()
    assert end.state == "done"
    results = [m.result for m in seen if isinstance(m, JobResult) and m.result]
    series, _ = scrape(url)
    tflops = pick(series, "dltui_bench_tflops", kind="gemm", device="cpu", precision="fp32",
                  framework="torch", gpus="0")  # fmt: skip
    assert {dict(key)["case"]: value for key, value in tflops.items()} == {
        r.shape: r.tflops for r in results if r.tflops is not None
    }
    assert one(series, "dltui_jobs_ended_total", state="done") == 1.0
    assert one(series, "dltui_job_running") == 0.0


async def test_a_gpt_runs_tokens_per_second_is_a_metric(agent_factory):
    require("torch")
    from tests.agents import until

    agent = agent_factory("--metrics", "127.0.0.1:0")
    url = metrics_url(agent)
    client, _ = await connect(agent.address)
    plan = ModelPlan(models=["gpt-tiny"], device="cpu", warmup=1, steps=3)
    await client.stream.send(Run(1, "job1", models=plan))
    seen: list = []
    end = await until(client.stream, lambda m: isinstance(m, JobEnd), collect=seen)
    await client.close()
    assert end.state == "done", end.error
    (result,) = [m.model for m in seen if isinstance(m, JobResult) and m.model]
    series, _ = scrape(url)
    labels = {"case": "gpt-tiny", "device": "cpu", "framework": "torch", "gpus": "1"}
    assert one(series, "dltui_train_tokens_per_second", **labels) == result.tokens_per_s
    assert not pick(series, "dltui_train_images_per_second", case="gpt-tiny")
    assert not pick(series, "dltui_train_mfu_ratio")  # a CPU has no dense 16-bit peak


def test_mfu_is_a_metric_where_the_run_has_one():
    result = ModelResult("gpt-1.3b", "torch", "cuda", "bf16", 8, 16, seq_len=2048,
                         tokens_per_s=523e3, mfu=0.6, peak_tflops=989.0)  # fmt: skip
    points = {spec.name: value for spec, _, value in model_points("h200", result)}
    assert points == {"dltui_train_tokens_per_second": 523e3, "dltui_train_mfu_ratio": 0.6}


async def test_sampling_follows_its_consumers(agent_factory):
    """No client and a 1 Hz scraper: 1 Hz; a client at 10 Hz: 10 Hz at once; 1 Hz again once
    it has left. (Each scrape here is the scraper: the test scrapes once a second.)"""
    agent = agent_factory("--metrics", "127.0.0.1:0")
    url = metrics_url(agent)

    async def scraped_once_a_second() -> Series:
        for _ in range(3):
            await asyncio.sleep(1.0)  # ok: the scraper's own interval is what is measured
            series, _ = scrape(url)
        return series

    assert one(scrape(url)[0], "dltui_agent_sampling_rate_hertz") == 0.2  # nobody: every 5 s
    assert one(await scraped_once_a_second(), "dltui_agent_sampling_rate_hertz") == 1.0
    client, _ = await connect(agent.address)
    await client.stream.send(Subscribe(1, 10.0))
    await next_samples(client.stream, 8)
    series, _ = scrape(url)
    assert one(series, "dltui_agent_sampling_rate_hertz") == 10.0
    assert one(series, "dltui_agent_clients") == 1.0
    assert one(series, "dltui_agent_samples_dropped_total") == 0.0
    await client.close()
    series = await scraped_once_a_second()
    assert one(series, "dltui_agent_sampling_rate_hertz") == 1.0
    assert one(series, "dltui_agent_clients") == 0.0


def test_metrics_from_the_config_file(agent_factory, tmp_path: Path):
    config = tmp_path / "agent.toml"
    config.write_text('metrics = "127.0.0.1:0"\n')
    agent = agent_factory("--config", str(config))
    url = metrics_url(agent)
    # Waited for: a scrape before the sampler's first host sample has no host series (a loaded
    # fresh clone's run scraped that early).
    wait_for(lambda: pick(scrape(url)[0], "dltui_host_memory_total_bytes"),
             what="the host's memory in a scrape")  # fmt: skip


def test_http_as_prometheus_speaks_it(agent_factory):
    """One connection kept open from scrape to scrape (HTTP/1.1, as Prometheus keeps it), HEAD,
    and clear answers to what is not a scrape; what is not HTTP gets a 400 and the door shut,
    and the next scrape is answered as before."""
    agent = agent_factory("--metrics", "127.0.0.1:0")
    url = urllib.parse.urlsplit(metrics_url(agent))
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    connection.connect()
    kept = connection.sock
    for _ in range(3):
        connection.request("GET", "/metrics", headers=OPENMETRICS)
        with connection.getresponse() as answer:
            assert answer.status == 200 and not answer.will_close
            body = answer.read()
        assert body.endswith(b"# EOF\n") and connection.sock is kept
    connection.request("HEAD", "/metrics")
    with connection.getresponse() as answer:
        assert answer.status == 200 and int(answer.headers["Content-Length"]) > 1000
        assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        assert answer.read() == b""
    for method, path, status in (("GET", "/", 404), ("POST", "/metrics", 405)):
        connection.request(method, path, body=b"x" if method == "POST" else None)
        with connection.getresponse() as answer:
            assert (answer.status, answer.reason) == (status, HTTPStatus(status).phrase)
            assert answer.headers["Allow"] == ("GET, HEAD" if status == 405 else None)
            answer.read()
    assert connection.sock is kept
    connection.close()
    with socket.create_connection((url.hostname, url.port), timeout=10) as garbage:
        garbage.sendall(b"\x16\x03\x01 not HTTP at all\r\n\r\n")
        answer = b"".join(iter(lambda: garbage.recv(4096), b""))  # until the agent closes
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert pick(scrape(metrics_url(agent))[0], "dltui_agent_info")


def test_the_faster_openmetrics_writer_gives_the_library_s_own_bytes(agent_factory, fake_gpus):
    """The agent asks prometheus-client's OpenMetrics writer not to escape names, which every
    dltui name makes a no-op: the bytes are those of the library's default escaping."""
    from prometheus_client.exposition import choose_encoder

    from dltui.agent.metrics_server import encoder_for
    from dltui.protocol import metric_names

    for spec in metric_names.all_specs():  # legacy names: what makes the escaping a no-op
        assert re.fullmatch(r"[a-zA-Z_:][a-zA-Z0-9_:]*", spec.name), spec.name
        assert all(re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", label) for label in spec.labels)
    fake_gpus([{"gpm": True}, {}])
    agent = agent_factory("--metrics", "127.0.0.1:0")
    url = metrics_url(agent)  # /metrics may answer before the first sample
    wait_for(lambda: pick(scrape(url)[0], "dltui_gpu_up", gpu="1"), what="GPU 1 in a scrape")
    families = list(text_string_to_metric_families(scrape(url)[1]))
    prometheus_2 = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
    library, content_type = choose_encoder(prometheus_2)
    faster, same_type = encoder_for(prometheus_2)
    assert faster is not library and same_type == content_type

    class Parsed:
        def collect(self):
            return families

    assert faster(Parsed()) == library(Parsed())
    assert faster(Parsed()).count(b"\n") > 100
