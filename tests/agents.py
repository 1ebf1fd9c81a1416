"""A test's side of a real agent: a client connection and its frames, raw bytes sent to it, a
tiny plan to run, the agent's /metrics read as Prometheus reads them, and what a run across two
agents must leave when one part is killed. Test modules import these from here, never from one
another."""

from __future__ import annotations

import asyncio
import re
import socket
import urllib.request

import psutil
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from dltui.client.connection import handshake
from dltui.client.target import parse_target
from dltui.client.transport import open_transport
from dltui.protocol.bench_plans import KernelPlan
from dltui.protocol.framing import FrameDecoder
from dltui.protocol.messages import Sample
from tests.conftest import AgentProcess, wait_for

TINY = KernelPlan(
    framework="torch",
    shape_set="tiny",
    kinds=["gemm"],
    precisions=["fp32"],
    device="cpu",
    iterations=3,
    max_seconds=0.2,
)
"""A plan that runs in a second or two on a CPU."""

OPENMETRICS = {"Accept": "application/openmetrics-text; version=1.0.0"}

Series = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def connect(address: str, secret: bytes | None = None):
    transport = await open_transport(parse_target(address))
    welcome = await handshake(transport.stream, secret, "test")
    return transport, welcome


async def raw_exchange(port: int, *payloads: bytes) -> list[dict]:
    """Send raw bytes to the agent, unauthenticated; every frame it sends before it closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for payload in payloads:
        writer.write(payload)
    await writer.drain()
    decoder, frames = FrameDecoder(), []
    while data := await asyncio.wait_for(reader.read(65536), 15):
        frames += decoder.feed(data)
    writer.close()
    return frames


async def collect_samples(stream, seconds: float) -> list[Sample]:
    samples: list[Sample] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while (left := deadline - loop.time()) > 0:
        try:
            message = await asyncio.wait_for(stream.receive(), left)
        except TimeoutError:
            break
        if isinstance(message, Sample):
            samples.append(message)
    return samples


async def next_samples(stream, count: int, timeout: float = 30.0) -> list[Sample]:
    """The next `count` samples, however long a busy machine takes to send them (up to
    `timeout`): a count in a fixed window of wall time failed on a saturated 2-core machine
    (6 samples in 2 s at 10 Hz, with load 8) where nothing was wrong with the agent."""
    samples: list[Sample] = []

    async def gather() -> None:
        while len(samples) < count:
            if isinstance(message := await stream.receive(), Sample):
                samples.append(message)

    await asyncio.wait_for(gather(), timeout)
    return samples


async def until(stream, predicate, timeout: float = 60.0, collect: list | None = None):
    """Receive until a message satisfies `predicate`; keep every message in `collect`."""

    async def loop():
        while True:
            message = await stream.receive()
            if collect is not None:
                collect.append(message)
            if predicate(message):
                return message

    return await asyncio.wait_for(loop(), timeout)


def listed(pid: int):
    """A predicate: a sample that lists process `pid`, its command line read."""

    def found(message) -> bool:
        return isinstance(message, Sample) and any(
            p.pid == pid and p.command for gpu in message.gpus for p in gpu.processes or ()
        )

    return found


def metrics_url(agent: AgentProcess) -> str:
    for line in agent.log:
        if match := re.search(r"metrics on (https?://\S+/metrics)", line):
            return match.group(1)
    raise AssertionError("the agent did not say where its metrics are: " + "\n".join(agent.log))


def scrape(url: str, timeout: float = 10.0) -> tuple[Series, str]:
    """Every sample of one scrape, by (name, sorted labels); and the text itself."""
    request = urllib.request.Request(url, headers=OPENMETRICS)
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        assert answer.headers["Content-Type"].startswith("application/openmetrics-text")
        text = answer.read().decode()
    series: Series = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            series[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return series, text


def pick(series: Series, metric: str, /, **labels: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples of `metric` with these labels (and any others)."""
    return {key: value for (found, key), value in series.items()
            if found == metric and labels.items() <= dict(key).items()}  # fmt: skip


def one(series: Series, metric: str, /, **labels: str) -> float:
    (value,) = pick(series, metric, **labels).values()
    return value


def assert_stopped_on_both(
    returncode: int, stderr: str, first: AgentProcess, killed: AgentProcess
) -> None:
    """A run across two agents whose part on `killed` was killed: the command fails, says which
    part and why, and neither agent is left running a part of it."""
    assert returncode == 1
    stderr = stderr.replace(socket.gethostname(), "host")
    assert "the run across servers stopped: " in stderr
    assert f"host@{killed.address} failed: the worker was killed by SIGKILL" in stderr
    for agent in (first, killed):
        wait_for(lambda a=agent: not psutil.Process(a.process.pid).children(), timeout=30)
        assert agent.process.poll() is None
