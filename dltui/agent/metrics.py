"""The agent's `/metrics` for Prometheus, built on each scrape from what the agent already holds:
the sampler's latest sample, the latest result of each benchmark case, its clients and its own
counters. A scrape never calls NVML, so it costs the GPUs nothing and answers at once while a
GPU hangs (that GPU reads `dltui_gpu_up 0`). Names and labels: protocol/metric_names.py, shared
with the OpenMetrics export of recordings. prometheus-client writes the exposition (text 0.0.4,
or OpenMetrics when the scraper asks).

The process's CPU seconds and RSS are read here from one /proc/self/stat kept open, under the
names prometheus-client's ProcessCollector uses: that collector opens three files and lists
every open descriptor on each scrape, a third of what a 1-GPU scrape cost.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import psutil
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from dltui.protocol.metric_names import (
    AGENT_CLIENTS,
    AGENT_DROPPED,
    AGENT_INFO,
    AGENT_LAG,
    AGENT_MISSED,
    AGENT_NVML_ERRORS,
    AGENT_RATE,
    AGENT_SAMPLE_AGE,
    CONDITION_UP,
    EVENTS,
    PROCESS_CPU,
    PROCESS_RSS,
    MetricSpec,
    Point,
    gpu_labels,
    sample_points,
)
from dltui.telemetry.host import ProcFile

if TYPE_CHECKING:
    from dltui.agent.server import Agent
    from dltui.telemetry.sampler import Sampler


def families(points: Iterable[Point]) -> list[Metric]:
    """prometheus-client's metric families, one per metric, in the order first met."""
    built: dict[MetricSpec, GaugeMetricFamily | CounterMetricFamily] = {}
    for spec, labels, value in points:
        family = built.get(spec)
        if family is None:
            kind = CounterMetricFamily if spec.kind == "counter" else GaugeMetricFamily
            family = built[spec] = kind(spec.name, spec.help, labels=spec.labels, unit=spec.unit)
        family.add_metric(labels, value)
    return list(built.values())


class ProcessFigures:
    """This process's CPU seconds and resident memory: one read of /proc/self/stat; psutil
    where there is no /proc."""

    def __init__(self) -> None:
        self._stat = ProcFile("/proc/self/stat")
        self._ticks = os.sysconf("SC_CLK_TCK")
        self._page = resource.getpagesize()

    def read(self) -> tuple[float, float]:
        """CPU seconds (user and system) and RSS bytes."""
        stat = self._stat.read()
        if stat is None:
            process = psutil.Process()
            times = process.cpu_times()
            return times.user + times.system, float(process.memory_info().rss)
        fields = stat.rpartition(b")")[2].split()  # after the name, which may hold spaces
        return (int(fields[11]) + int(fields[12])) / self._ticks, float(
            int(fields[21]) * self._page
        )


class AgentCollector(Collector):
    def __init__(self, agent: Agent, sampler: Sampler) -> None:
        self.agent = agent
        self.sampler = sampler
        inventory = agent.inventory
        self.hostname = inventory.hostname
        self._gpus = {gpu.index: gpu_labels(self.hostname, gpu.index, gpu)
                      for gpu in inventory.gpus}  # fmt: skip
        self._info = (self.hostname, inventory.dltui, inventory.driver_version or "",
                      inventory.cuda_version or "")  # fmt: skip
        self._process = ProcessFigures()

    def collect(self) -> Iterable[Metric]:
        self.agent.demand.scraped()
        return families(self._points())

    def _points(self) -> Iterator[Point]:
        host = (self.hostname,)
        sample = self.agent.latest
        if sample is not None:
            yield from sample_points(sample, self.hostname, self._gpus)
        running = self.agent.jobs.current
        yield from self.agent.results.points(running.id if running is not None else None)
        yield AGENT_INFO, self._info, 1.0
        for (kind, severity), count in sorted(self.agent.events.counts().items()):
            yield EVENTS, (self.hostname, kind, severity), float(count)
        for event in self.agent.events.raised():
            gpu = "" if event.gpu is None else str(event.gpu)
            labels = (self.hostname, gpu, event.kind, event.rule or "", event.severity)
            yield CONDITION_UP, labels, 1.0
        clients = [client for client in tuple(self.agent.connections) if client.admitted]
        yield AGENT_CLIENTS, host, float(len(clients))
        for client in clients:
            yield AGENT_DROPPED, (self.hostname, client.peer), float(client.dropped)
        for call, count in sorted(self.sampler.nvml_errors.items()):
            yield AGENT_NVML_ERRORS, (self.hostname, call), float(count)
        yield AGENT_LAG, host, self.sampler.lag
        yield AGENT_MISSED, host, float(self.sampler.missed)
        yield AGENT_RATE, host, self.agent.demand.rate_hz
        if sample is not None:
            yield AGENT_SAMPLE_AGE, host, max(0.0, time.monotonic() - sample.mono)
        cpu, rss = self._process.read()
        yield PROCESS_CPU, (), cpu
        yield PROCESS_RSS, (), rss


def registry_for(agent: Agent, sampler: Sampler) -> CollectorRegistry:
    """What /metrics serves: the agent's collector, alone."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(AgentCollector(agent, sampler))
    return registry
