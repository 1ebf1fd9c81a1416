"""A recording as OpenMetrics text with timestamps, for `promtool tsdb create-blocks-from
openmetrics`: a week of recorded sessions becomes history in the fleet's Prometheus.

The metrics are the live endpoint's, named in one place (protocol/metric_names.py), with one
label more: `instance`, the agent as the recording names it (its address), so two agents on one
host stay apart. Telemetry is stamped with the agent's clock (as the CSV's `time`), job frames
with the recorder's; a series' point no later than the one before it is left out (Prometheus
takes one value per series and millisecond, in order).

OpenMetrics wants a metric's series together and each series' points in time order; a recording
holds them by time. So each series' (time, value) pairs are spilled in blocks to a temporary file
as they come, and read back series by series at the end: memory holds at most SPILL_BUDGET
pairs, whatever the length of the recording, and the spill takes 16 bytes a point in $TMPDIR.
"""

from __future__ import annotations

import math
import os
import tempfile
from array import array
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, TextIO

from dltui.outfiles import Replacement
from dltui.protocol.inventory import Inventory
from dltui.protocol.messages import JobEnd, JobProgress, JobResult, Sample, Welcome
from dltui.protocol.metric_names import (
    MetricSpec,
    Point,
    all_specs,
    gpu_labels,
    kernel_points,
    model_points,
    progress_points,
    sample_points,
)
from dltui.recording.reader import Say, in_time_order, timed_records

BLOCK = 4096
"""Pairs a series holds before they go to the spill file."""
SPILL_BUDGET = 1 << 21
"""Pairs held in all (32 MB), past which every series' pairs are spilled."""


def escape(value: str) -> str:
    """A label value as OpenMetrics quotes it."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def number(value: float) -> str:
    """A value as OpenMetrics writes numbers: Python's shortest form, and NaN, +Inf, -Inf."""
    text = repr(value)
    if text[-1] not in "nf":  # repr's nan, inf and -inf are the only ones ending so
        return text
    return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")


class _Series:
    __slots__ = ("blocks", "last", "pairs", "prefix")

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.pairs = array("d")
        """(seconds rounded to the millisecond, value), flat."""
        self.blocks = array("q")
        """(offset, pairs) of each block in the spill file, flat."""
        self.last = -math.inf


class OpenMetricsWriter:
    """Points in, in any order of series; the text out at `write`."""

    def __init__(self, spill: BinaryIO) -> None:
        self._spill = spill
        self._spilled = 0
        self._held = 0
        self._series: dict[tuple[str, str, tuple[str, ...]], _Series] = {}
        self._families: dict[str, tuple[MetricSpec, list[_Series]]] = {}
        self.points = 0

    def add(self, points: Iterable[Point], seconds: float, instance: str) -> None:
        """Points taken at `seconds` (Unix time) by the agent named `instance`."""
        # Prometheus keeps milliseconds; repr writes this float with at most three decimals.
        stamp = round(seconds * 1000) / 1000
        for spec, labels, value in points:
            series = self._series.get((spec.name, instance, labels))
            if series is None:
                series = self._new_series(spec, labels, instance)
            if stamp <= series.last:
                continue
            series.last = stamp
            series.pairs.append(stamp)
            series.pairs.append(value)
            self._held += 1
            if len(series.pairs) >= 2 * BLOCK:
                self._spill_series(series)
        if self._held > SPILL_BUDGET:
            for series in self._series.values():
                self._spill_series(series)

    def _new_series(self, spec: MetricSpec, labels: tuple[str, ...], instance: str) -> _Series:
        pairs = [*zip(spec.labels, labels, strict=True), ("instance", instance)]
        text = ",".join(f'{name}="{escape(value)}"' for name, value in pairs)
        series = self._series[spec.name, instance, labels] = _Series(
            f"{spec.sample_name}{{{text}}} "
        )
        self._families.setdefault(spec.name, (spec, []))[1].append(series)
        return series

    def _spill_series(self, series: _Series) -> None:
        if not series.pairs:
            return
        data = series.pairs.tobytes()
        self._spill.seek(self._spilled)
        self._spill.write(data)
        series.blocks.extend((self._spilled, len(series.pairs)))
        self._spilled += len(data)
        self._held -= len(series.pairs) // 2
        series.pairs = array("d")

    def write(self, out: TextIO) -> None:
        """Every family (in the endpoint's order), each series' points in time order, # EOF."""
        self._spill.flush()
        order = {spec.name: place for place, spec in enumerate(all_specs())}
        for name in sorted(self._families, key=lambda name: order.get(name, len(order))):
            spec, family = self._families[name]
            out.write(f"# HELP {spec.name} {spec.help}\n# TYPE {spec.name} {spec.kind}\n")
            if spec.unit:
                out.write(f"# UNIT {spec.name} {spec.unit}\n")
            for series in family:
                prefix = series.prefix
                for pairs in self._read(series):
                    if pairs:
                        # Each line is prefix + point: prefix + ("\n" + prefix).join(points), in C.
                        points = [
                            f"{number(value)} {stamp!r}"
                            for stamp, value in zip(pairs[::2], pairs[1::2], strict=True)
                        ]
                        out.write(prefix + f"\n{prefix}".join(points) + "\n")
                        self.points += len(points)
        out.write("# EOF\n")

    def _read(self, series: _Series) -> Iterator[array[float]]:
        fd = self._spill.fileno()
        for offset, count in zip(series.blocks[::2], series.blocks[1::2], strict=True):
            pairs = array("d")
            pairs.frombytes(os.pread(fd, count * pairs.itemsize, offset))
            yield pairs
        yield series.pairs


def export_openmetrics(paths: list[Path], out: Path, say: Say) -> dict[str, int]:
    """Write every recording's points to `out`; returns the points and the results among them.
    A damaged recording's note goes to `say`."""
    results = models = 0
    with tempfile.TemporaryFile(prefix="dltui-openmetrics-") as spill:
        writer = OpenMetricsWriter(spill)
        for path in in_time_order(paths):  # a series' points go forward in time, or are lost
            inventories: dict[str, Inventory] = {}
            labels: dict[str, dict[int, tuple[str, ...]]] = {}
            for record, _ in timed_records(path, say):
                message, source = record.message, record.source
                inventory = inventories.get(source)
                hostname = inventory.hostname if inventory is not None else source
                if isinstance(message, Sample):
                    points = sample_points(message, hostname, labels.get(source, {}))
                    writer.add(points, message.wall, source)
                elif isinstance(message, Welcome):
                    inventories[source] = message.inventory
                    host = message.inventory.hostname
                    labels[source] = {gpu.index: gpu_labels(host, gpu.index, gpu)
                                      for gpu in message.inventory.gpus}  # fmt: skip
                elif isinstance(message, JobProgress):
                    writer.add(progress_points(hostname, message), record.received, source)
                elif isinstance(message, JobEnd):
                    writer.add(progress_points(hostname, None), record.received, source)
                elif isinstance(message, JobResult):
                    if message.result is not None:
                        results += 1
                        writer.add(kernel_points(hostname, message.result), record.received,
                                   source)  # fmt: skip
                    if message.model is not None:
                        models += 1
                        writer.add(model_points(hostname, message.model), record.received,
                                   source)  # fmt: skip
        with Replacement(out) as replacement, open(replacement.path, "w", encoding="utf-8") as file:
            writer.write(file)
    return {"telemetry": writer.points, "results": results, "models": models, "steps": 0}
