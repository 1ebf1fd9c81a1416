"""The export's two small tables of issue #14: `events` (one row per health event or alert)
and `processes` (one row per GPU process seen, with its owner and place, from its first list
to its last). A few rows per recording, kept until the end like the results; export.py adds
them to every format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dltui.protocol.messages import Event, Sample

Row = dict[str, Any]

EVENT_COLUMNS = ("recording", "server", "hostname", "time", "elapsed", "id", "gpu", "kind",
                 "severity", "state", "rule", "value", "detail")  # fmt: skip
PROCESS_COLUMNS = ("recording", "server", "hostname", "gpu", "pid", "user", "name", "command",
                   "started", "first_seen", "last_seen", "memory_max", "sm_util_mean",
                   "mem_util_mean", "cpu_mean", "rss_max", "ns_pid", "container", "runtime",
                   "pod", "pod_name", "container_name", "job", "job_claimed", "own",
                   "gpu_instance")  # fmt: skip
_KEPT = ("user", "name", "command", "started", "ns_pid", "container", "runtime", "pod",
         "pod_name", "container_name", "job", "job_claimed", "own", "gpu_instance")  # fmt: skip


def event_row(recording: str, server: str, hostname: str, event: Event, started: float) -> Row:
    return {"recording": recording, "server": server, "hostname": hostname, "time": event.wall,
            "elapsed": round(event.wall - started, 3), "id": event.id, "gpu": event.gpu,
            "kind": event.kind, "severity": event.severity, "state": event.state,
            "rule": event.rule, "value": event.value, "detail": event.detail}  # fmt: skip


@dataclass
class _Seen:
    row: Row
    sums: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)


class ProcessTable:
    """Each process once per GPU, from the process lists the samples carry."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str, int, int, float | None], _Seen] = {}

    def observe(self, recording: str, server: str, hostname: str, sample: Sample) -> None:
        for gpu in sample.gpus:
            for process in gpu.processes or ():
                key = (recording, server, gpu.index, process.pid, process.started)
                seen = self._seen.get(key)
                if seen is None:
                    row = {"recording": recording, "server": server, "hostname": hostname,
                           "gpu": gpu.index, "pid": process.pid, "first_seen": sample.wall,
                           "memory_max": process.memory, "rss_max": process.rss}  # fmt: skip
                    row |= {name: getattr(process, name) for name in _KEPT}
                    seen = self._seen[key] = _Seen(row)
                seen.row["last_seen"] = sample.wall
                for name, value in (("memory_max", process.memory), ("rss_max", process.rss)):
                    if value is not None:
                        seen.row[name] = max(seen.row[name] or 0, value)
                for name in ("sm_util", "mem_util", "cpu"):
                    value = getattr(process, name)
                    if value is not None:
                        seen.sums[name] = seen.sums.get(name, 0.0) + value
                        seen.counts[name] = seen.counts.get(name, 0) + 1

    def rows(self) -> list[Row]:
        found = []
        for seen in self._seen.values():
            means = {f"{name}_mean": seen.sums[name] / seen.counts[name]
                     if seen.counts.get(name) else None
                     for name in ("sm_util", "mem_util", "cpu")}  # fmt: skip
            found.append({column: (seen.row | means).get(column) for column in PROCESS_COLUMNS})
        return found
