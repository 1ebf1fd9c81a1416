"""A recording read whole for a report: its records, its benchmark phases, who its servers are.

Apart from report.py, so that the report's plots (plots.py) and its pages (report.py) both take
it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dltui.fleet.phases import Phase
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.protocol.inventory import Inventory
from dltui.protocol.messages import Welcome
from dltui.recording.format import Header, Record
from dltui.recording.phases import phases
from dltui.recording.reader import RecordingReader, Say, recording_names


@dataclass
class RecordedSession:
    """One recording, read whole: its header, its records and the benchmark phases in them."""

    name: str
    header: Header
    records: list[Record]
    phases: list[Phase]

    def inventories(self) -> dict[str, Inventory]:
        return {r.source: r.message.inventory for r in self.records
                if isinstance(r.message, Welcome)}  # fmt: skip

    def hostname(self, source: str) -> str:
        """The source's hostname, or hostname@source where two of the recording share one."""
        inventories = self.inventories()
        inventory = inventories.get(source)
        if inventory is None:
            return source
        hostnames = [other.hostname for other in inventories.values()]
        name = inventory.hostname
        return name if hostnames.count(name) == 1 else f"{name}@{source}"

    def kernel_phases(self) -> list[tuple[Phase, KernelResult]]:
        return [(p, p.result) for p in self.phases if isinstance(p.result, KernelResult)]

    def training_phases(self) -> list[tuple[Phase, ModelResult]]:
        return [(p, p.result) for p in self.phases if isinstance(p.result, ModelResult)]


def load(paths: list[Path], say: Say) -> list[RecordedSession]:
    """Each recording read whole; a damaged one's note goes to `say`."""
    sessions = []
    for name, path in zip(recording_names(paths), paths, strict=True):
        reader = RecordingReader(path)
        records = reader.read_all()
        if note := reader.damage_report():
            say(note)
        sessions.append(RecordedSession(name, reader.header, records, phases(records)))
    return sessions
