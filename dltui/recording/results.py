"""The benchmark results a recording holds, each with the server that measured it."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from dltui.plans.assertions import Results, bench_results
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.protocol.messages import JobResult, Welcome
from dltui.recording import SUFFIX
from dltui.recording.format import Record
from dltui.recording.reader import RecordingReader, is_recording


def results_in(path: Path, what: str = "results") -> Results:
    """The results of a recording or of a `dltui bench --json` file, told apart by what the
    file holds and not by its name (`--json` writes any name it is given); a .dlrec that is no
    recording goes to the reader, which says what is wrong with it."""
    if is_recording(path) or path.suffix.lower() == SUFFIX:
        return recorded_results(path)
    return bench_results(path, what)


def recorded_results(path: str | os.PathLike[str]) -> Results:
    """(server, result) pairs in the order they were recorded; a server is its hostname, or
    host@address where two servers share a hostname. A torn tail loses only itself."""
    return results_of(RecordingReader(path))


def results_of(records: Iterable[Record]) -> Results:
    """The same, from records already read."""
    kernels: list[tuple[str, KernelResult]] = []
    models: list[tuple[str, ModelResult]] = []
    hostnames: dict[str, str] = {}
    for record in records:
        message = record.message
        if isinstance(message, Welcome):
            hostnames[record.source] = message.inventory.hostname
        elif isinstance(message, JobResult):
            server = _server(record.source, hostnames)
            if message.result is not None:
                kernels.append((server, message.result))
            if message.model is not None:
                models.append((server, message.model))
    return kernels, models


def _server(source: str, hostnames: dict[str, str]) -> str:
    name = hostnames.get(source, source)
    shared = sum(1 for other in hostnames.values() if other == name) > 1
    return f"{name}@{source}" if shared else name
