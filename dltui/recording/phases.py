"""Benchmark phases in a recording: each timed case, with the telemetry seen while it ran.

A case runs from its `progress` frame to its `result` frame; both and the samples between them
carry the recording client's receive time, so they line up whatever the agents' clocks say.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from dltui.protocol.messages import JobProgress, JobResult, KernelResult, Sample, Welcome
from dltui.recording.format import Record


@dataclass
class Phase:
    recording: str
    server: str
    hostname: str
    start: float
    end: float
    result: KernelResult
    telemetry: dict[str, float] = field(default_factory=dict)
    """Means over the phase: util and tensor active (mean over GPUs), power, PCIe and NVLink
    (summed over GPUs); absent when no sample fell inside a short phase."""

    @property
    def tflops_per_watt(self) -> float | None:
        power = self.telemetry.get("power")
        if self.result.tflops is None or not power:
            return None
        return self.result.tflops / power


MEANS = ("util_gpu", "tensor_active")
SUMS = ("power", "pcie_tx", "pcie_rx", "nvlink_tx", "nvlink_rx")


def phases(recording: str, records: list[Record]) -> list[Phase]:
    hostnames: dict[str, str] = {}
    started: dict[str, float] = {}
    samples: dict[str, list[tuple[float, Sample]]] = {}
    found: list[Phase] = []
    for record in records:
        message, source = record.message, record.source
        if isinstance(message, Welcome):
            hostnames[source] = message.inventory.hostname
        elif isinstance(message, Sample):
            samples.setdefault(source, []).append((record.received, message))
        elif isinstance(message, JobProgress):
            started[source] = record.received
        elif isinstance(message, JobResult) and message.result and source in started:
            start = started.pop(source)
            host = hostnames.get(source, source)
            found.append(Phase(recording, source, host, start, record.received, message.result))
    for phase in found:
        inside = [s for t, s in samples.get(phase.server, []) if phase.start <= t <= phase.end]
        phase.telemetry = _means(inside)
    return found


def _means(samples: list[Sample]) -> dict[str, float]:
    per_field: dict[str, list[float]] = {}
    for sample in samples:
        gpus = [gpu for gpu in sample.gpus if gpu.state == "ok"]
        for name in MEANS:
            values = [gpu.values[name] for gpu in gpus if name in gpu.values]
            if values:
                per_field.setdefault(name, []).append(sum(values) / len(values))
        for name in SUMS:
            values = [gpu.values[name] for gpu in gpus if name in gpu.values]
            if values:
                per_field.setdefault(name, []).append(sum(values))
    return {name: statistics.fmean(values) for name, values in per_field.items()}
