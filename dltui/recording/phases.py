"""Benchmark phases in a recording: each timed case, with the telemetry seen while it ran.

A case (a kernel case, or a training run) runs from the first `progress` frame with a new
`done` to its `result` frame; both and the samples between them carry the recording client's
receive time, so they line up whatever the agents' clocks say.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from dltui.protocol.messages import (
    JobProgress,
    JobResult,
    KernelResult,
    ModelResult,
    Sample,
    Welcome,
)
from dltui.recording.format import Record


@dataclass
class Phase:
    recording: str
    server: str
    hostname: str
    start: float
    end: float
    result: KernelResult | ModelResult
    telemetry: dict[str, float] = field(default_factory=dict)
    """Means over the phase: util and tensor active (mean over GPUs), power, PCIe and NVLink
    (summed over GPUs; for a training run, over the GPUs it used, 0 to N-1); absent when no
    sample fell inside a short phase."""

    @property
    def tflops_per_watt(self) -> float | None:
        power = self.telemetry.get("power")
        if not isinstance(self.result, KernelResult) or self.result.tflops is None or not power:
            return None
        return self.result.tflops / power

    @property
    def images_per_watt(self) -> float | None:
        """A training run's images/s per watt drawn by the GPUs it used."""
        power = self.telemetry.get("power")
        if not isinstance(self.result, ModelResult) or not self.result.images_per_s or not power:
            return None
        return self.result.images_per_s / power


MEANS = ("util_gpu", "tensor_active")
SUMS = ("power", "pcie_tx", "pcie_rx", "nvlink_tx", "nvlink_rx")


def starts_case(last_done: dict[tuple[str, str], int], record: Record) -> bool:
    """Whether a frame begins a benchmark case: progress with a new `done` for its job (later
    progress of the same case only says how far it is). `last_done` is updated; the caller
    keeps it across the whole recording."""
    message = record.message
    if not isinstance(message, JobProgress):
        return False
    key = (record.source, message.job)
    new = last_done.get(key) != message.done
    last_done[key] = message.done
    return new


def phases(recording: str, records: list[Record]) -> list[Phase]:
    hostnames: dict[str, str] = {}
    started: dict[str, float] = {}
    last_done: dict[tuple[str, str], int] = {}
    samples: dict[str, list[tuple[float, Sample]]] = {}
    found: list[Phase] = []
    for record in records:
        message, source = record.message, record.source
        if isinstance(message, Welcome):
            hostnames[source] = message.inventory.hostname
        elif isinstance(message, Sample):
            samples.setdefault(source, []).append((record.received, message))
        elif starts_case(last_done, record):
            started[source] = record.received
        elif isinstance(message, JobResult) and source in started:
            result = message.result or message.model
            if result is not None:
                start = started.pop(source)
                host = hostnames.get(source, source)
                found.append(Phase(recording, source, host, start, record.received, result))
    for phase in found:
        inside = [s for t, s in samples.get(phase.server, []) if phase.start <= t <= phase.end]
        used = None
        if isinstance(phase.result, ModelResult):
            used = phase.result.gpus // max(phase.result.servers, 1)
        phase.telemetry = _means(inside, used)
    return found


def _means(samples: list[Sample], used: int | None = None) -> dict[str, float]:
    """Per-field means over `samples`; with `used`, of GPUs 0 to used-1 only."""
    per_field: dict[str, list[float]] = {}
    for sample in samples:
        gpus = [gpu for gpu in sample.gpus
                if gpu.state == "ok" and (used is None or gpu.index < used)]  # fmt: skip
        for name in MEANS:
            values = [gpu.values[name] for gpu in gpus if name in gpu.values]
            if values:
                per_field.setdefault(name, []).append(sum(values) / len(values))
        for name in SUMS:
            values = [gpu.values[name] for gpu in gpus if name in gpu.values]
            if values:
                per_field.setdefault(name, []).append(sum(values))
    return {name: statistics.fmean(values) for name, values in per_field.items()}
