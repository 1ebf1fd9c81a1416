"""Fleet state: per-server inventory, link state and a ring buffer per telemetry series.

`Fleet.apply` is the only way in, and it takes protocol messages, so a live agent and a
recording build the same state. It does a few appends per field and nothing else: the UI
reads the state on its own timer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

from dltui.fleet.health import EventBook
from dltui.fleet.phases import Phase, PhaseTracker
from dltui.fleet.series import Series
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.protocol.inventory import Inventory
from dltui.protocol.messages import (
    ConnectionState,
    ConnectionStateName,
    ErrorMessage,
    Event,
    JobEnd,
    JobProgress,
    JobResult,
    JobState,
    Message,
    Pong,
    Sample,
    Welcome,
)
from dltui.protocol.samples import GpuProcess, GpuState, MigSample

SERIES_CAPACITY = 1200  # two minutes at 10 Hz


@dataclass
class GpuView:
    index: int
    state: GpuState = "ok"
    errors: dict[str, str] = field(default_factory=dict)
    series: dict[str, Series] = field(default_factory=dict)

    def last(self, name: str) -> float | None:
        series = self.series.get(name)
        return series.last() if series else None


@dataclass
class JobView:
    """One benchmark job on one server, as its frames told it."""

    id: str
    done: int = 0
    total: int = 0
    label: str = ""
    state: JobState | Literal["running"] = "running"
    error: str | None = None
    fraction: float | None = None
    """How far the current case is, where the worker says (training runs)."""
    results: list[KernelResult] = field(default_factory=list)
    model_results: list[ModelResult] = field(default_factory=list)
    ended: float | None = None
    started: float | None = field(default=None, compare=False)
    """When its first frame came, on the server's timeline: how long it has been running (not
    part of what the frames say, so two views of one job compare equal without it)."""

    def progress(self) -> float:
        """0–1 over its cases, a training run's current case by its own fraction."""
        if not self.total:
            return 0.0
        done = self.done + (self.fraction or 0.0) if self.state == "running" else self.total
        return min(done / self.total, 1.0)

    def remaining(self, now: float) -> float | None:
        """Seconds left at the pace so far; None until the pace is known (a tenth of the way:
        before that, start-up and compilation make any pace a guess)."""
        progress = self.progress()
        if self.state != "running" or self.started is None or not 0.1 <= progress < 1:
            return None
        return (now - self.started) * (1 - progress) / progress


@dataclass
class ServerView:
    """Everything known about one server, as the frames told it."""

    source: str
    link: ConnectionStateName = "connecting"
    link_since: float | None = None
    link_detail: str | None = None
    rtt: float | None = None
    offset: float | None = None
    """Agent clock minus client clock, seconds."""
    agent_id: str | None = None
    inventory: Inventory | None = None
    host: dict[str, Series] = field(default_factory=dict)
    cpu_per_core: list[float] = field(default_factory=list)
    gpus: dict[int, GpuView] = field(default_factory=dict)
    samples: int = 0
    dropped: int = 0
    last_error: str | None = None
    last_sample_time: float | None = None
    jobs: dict[str, JobView] = field(default_factory=dict)
    """Jobs in the order they started; the last is the one to show."""
    phases: list[Phase] = field(default_factory=list)
    """Its benchmark cases, in the order they started (the fleet's tracker finds them)."""
    processes: dict[int, list[GpuProcess]] = field(default_factory=dict)
    """GPU index -> the compute processes on it, as last reported (every few seconds)."""
    mig: dict[int, list[MigSample]] = field(default_factory=dict)
    """GPU index -> its MIG instances' readings, as last reported."""
    events: EventBook = field(default_factory=EventBook)
    """Its health events and alerts, and the conditions up now."""

    @property
    def name(self) -> str:
        return self.inventory.hostname if self.inventory else self.source

    def job(self, job_id: str) -> JobView:
        view = self.jobs.get(job_id)
        if view is None:
            view = self.jobs[job_id] = JobView(job_id)
        return view

    @property
    def latest_job(self) -> JobView | None:
        return next(reversed(self.jobs.values()), None)

    def _series(self, table: dict[str, Series], name: str) -> Series:
        series = table.get(name)
        if series is None:
            series = table[name] = Series(SERIES_CAPACITY)
        return series

    def _gap(self, t: float) -> None:
        for series in self.host.values():
            series.mark_gap(t)
        for gpu in self.gpus.values():
            for series in gpu.series.values():
                series.mark_gap(t)

    def apply_sample(self, sample: Sample) -> None:
        # Place agent time on the client's clock so series from different hosts line up.
        t = sample.wall - (self.offset or 0.0)
        for name, value in sample.host.values.items():
            self._series(self.host, name).append(t, value)
        self.cpu_per_core = sample.host.cpu_per_core
        for gpu_sample in sample.gpus:
            gpu = self.gpus.get(gpu_sample.index)
            if gpu is None:
                gpu = self.gpus[gpu_sample.index] = GpuView(gpu_sample.index)
            gpu.state = gpu_sample.state
            gpu.errors = gpu_sample.errors
            if gpu_sample.processes is not None:
                self.processes[gpu_sample.index] = gpu_sample.processes
            if gpu_sample.mig is not None:
                self.mig[gpu_sample.index] = gpu_sample.mig
            for name, value in gpu_sample.values.items():
                self._series(gpu.series, name).append(t, value)
        self.samples += 1
        self.last_sample_time = t


class Fleet:
    """All servers, in the order they were added; `version` changes whenever anything does."""

    def __init__(self) -> None:
        self.servers: dict[str, ServerView] = {}
        self.phases = PhaseTracker()
        self.version = 0

    def add(self, source: str) -> ServerView:
        server = self.servers.get(source)
        if server is None:
            server = self.servers[source] = ServerView(source)
            self.version += 1
        return server

    def apply(self, source: str, message: Message, received: float | None = None) -> None:
        """Take one frame. A replay gives the time it was `received`, which then places the
        benchmark phases (a seek applies old frames before any sample)."""
        server = self.add(source)
        if isinstance(message, (JobProgress, JobResult, JobEnd)) and message.job not in server.jobs:
            server.job(message.job).started = self._when(server, received)
        if isinstance(message, Sample):
            server.apply_sample(message)
        elif isinstance(message, ConnectionState):
            if message.state != server.link:
                server.link_since = message.wall
                if message.state != "live":
                    server._gap(message.wall)
            server.link = message.state
            server.link_detail = message.detail
            server.rtt = message.rtt
            if message.offset is not None:  # keep the last estimate across a reconnect
                server.offset = message.offset
        elif isinstance(message, Welcome):
            server.agent_id = message.agent_id
            server.inventory = message.inventory
        elif isinstance(message, Pong):
            server.dropped = message.dropped
        elif isinstance(message, JobProgress):
            job = server.job(message.job)
            job.done, job.total, job.label = message.done, message.total, message.label
            job.fraction = message.fraction
        elif isinstance(message, JobResult):
            job = server.job(message.job)
            if message.result is not None:
                job.results.append(message.result)
            if message.model is not None:
                job.model_results.append(message.model)
        elif isinstance(message, JobEnd):
            job = server.job(message.job)
            job.state, job.error, job.ended = message.state, message.error, message.wall
        elif isinstance(message, ErrorMessage):
            server.last_error = f"{message.code}: {message.message}"
        elif isinstance(message, Event):
            server.events.add(message)
        started = self.phases.observe(source, message, self._when(server, received))
        if started is not None:
            server.phases.append(started)
        self.version += 1

    @staticmethod
    def _when(server: ServerView, received: float | None) -> float:
        """A frame's time on the server's own timeline: where its samples are drawn."""
        if received is not None:
            return received
        return server.last_sample_time if server.last_sample_time is not None else time.time()

    def reset(self) -> None:
        """Forget everything the frames said, keeping each server (the UI holds them): a replay
        seeking backwards rebuilds the state from the start."""
        for source, server in self.servers.items():
            fresh = ServerView(source)
            for name in ServerView.__dataclass_fields__:
                setattr(server, name, getattr(fresh, name))
        self.phases = PhaseTracker()
        self.version += 1

    def summary(self) -> dict[str, int]:
        """How many servers are in each link state."""
        counts: dict[str, int] = {}
        for server in self.servers.values():
            counts[server.link] = counts.get(server.link, 0) + 1
        return counts
