"""The report's health section: per GPU, how healthy it was over the recording (its PCIe link
against the maximum, replays, remapped or retired memory, uncorrected ECC, NVLink errors,
the clock throttle reasons seen), and every health event and alert in order.

A figure measured on a sick GPU (a link at x8, a hardware slowdown) blames the wrong thing on
the server's design: the report puts the two side by side.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

from dltui.plans.topology import pcie_text
from dltui.protocol.fields import throttle_reasons_in
from dltui.protocol.inventory import GpuInfo
from dltui.protocol.messages import Event, Sample, Welcome
from dltui.recording.format import Record

Recording = tuple[str, Sequence[Record]]
"""A recording's name and its records."""
HEALTH_HEADER = ["recording", "server", "GPU", "PCIe link", "replays", "remapped rows",
                 "retired pages", "uncorrected ECC", "NVLink errors", "clocks held by",
                 "events"]  # fmt: skip
EVENTS_HEADER = ["recording", "server", "time", "GPU", "severity", "kind", "state", "detail"]


def health_table(recordings: Sequence[Recording]) -> list[list[str]]:
    """A row per GPU of every server recorded."""
    rows = [HEALTH_HEADER]
    for name, records in recordings:
        last: dict[tuple[str, int], dict[str, float]] = {}
        held: dict[tuple[str, int], set[str]] = {}
        infos: dict[tuple[str, int], GpuInfo] = {}
        events: dict[tuple[str, int | None], list[Event]] = {}
        for record in records:
            message, source = record.message, record.source
            if isinstance(message, Welcome):
                infos |= {(source, gpu.index): gpu for gpu in message.inventory.gpus}
            elif isinstance(message, Sample):
                for gpu in message.gpus:
                    key = (source, gpu.index)
                    last.setdefault(key, {}).update(gpu.values)
                    if "throttle" in gpu.values:
                        words = throttle_reasons_in(int(gpu.values["throttle"]))
                        held.setdefault(key, set()).update(w for w in words if w != "idle")
            elif isinstance(message, Event):
                events.setdefault((source, message.gpu), []).append(message)
        for key in sorted(infos.keys() | last.keys()):
            values = last.get(key, {})
            rows.append([name, key[0], str(key[1]), _link(infos.get(key), values),
                         _count(values, "pcie_replay"),
                         _count(values, "remapped_correctable", "remapped_uncorrectable"),
                         _count(values, "retired_sbe", "retired_dbe"),
                         _count(values, "ecc_uncorrected"),
                         _count(values, "nvlink_crc_errors", "nvlink_replay_errors",
                                "nvlink_recovery_errors"),
                         ", ".join(sorted(held.get(key, ()))) or "–",
                         _events(events.get(key, []))])  # fmt: skip
    return rows


def events_table(recordings: Sequence[Recording]) -> list[list[str]]:
    """Every health event and alert, in the order they arrived."""
    rows = [EVENTS_HEADER]
    for name, records in recordings:
        for record in records:
            event = record.message
            if isinstance(event, Event):
                when = time.strftime("%H:%M:%S", time.localtime(event.wall))
                rows.append([name, record.source, when, "host" if event.gpu is None
                             else str(event.gpu), event.severity, event.kind, event.state,
                             event.detail])  # fmt: skip
    return rows


def _link(info: GpuInfo | None, values: dict[str, float]) -> str:
    if info is None:
        return "–"
    if "pcie_gen" in values and "pcie_width" in values:
        info = dataclasses.replace(info, pcie_gen=int(values["pcie_gen"]),
                                   pcie_width=int(values["pcie_width"]))  # fmt: skip
    return pcie_text(info)


def _count(values: dict[str, float], *names: str) -> str:
    found = [values[name] for name in names if name in values]
    return f"{sum(found):g}" if found else "–"


def _events(events: list[Event]) -> str:
    if not events:
        return "none"
    worst = max(events, key=lambda e: ("info", "warning", "critical").index(e.severity))
    return f"{len(events)} (worst {worst.severity})"
