"""Results side by side: a row per benchmark, a column per server (or, for training, per
server and GPU count), each cell one result with the telemetry of the phase it ran in.

Built from the fleet on demand (results are few: hundreds, not the samples' millions), and
free of any UI, so the results screen draws it and an export writes it, from one place.
Ratios and scaling efficiency are derived here, never stored: the baseline is a choice of
the reader (another column, or the published reference the result carries).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from dltui.errors import UsageError
from dltui.fleet.phases import Phase, Result
from dltui.fleet.state import Fleet
from dltui.formatting import counted
from dltui.plans import formulas
from dltui.plans.scaling import Scaling, scaling, throughput, throughput_unit
from dltui.protocol.bench_results import KernelResult, ModelResult

REFERENCE = "reference"
"""The baseline that is each result's published figure (DeepBench's V100, tf_cnn_benchmarks)."""

Metric = Literal["rate", "per_watt", "efficiency"]
METRICS: tuple[Metric, ...] = ("rate", "per_watt", "efficiency")
METRIC_WORDS = {"rate": "throughput", "per_watt": "per watt", "efficiency": "scaling efficiency"}


class ExportError(UsageError):
    """A file name the results cannot be written to; says why."""


@dataclass
class Cell:
    column: str
    result: Result
    phase: Phase | None = None
    scaling: Scaling = field(default_factory=Scaling)

    def value(self, metric: Metric) -> float | None:
        result = self.result
        if result.error is not None:
            return None
        if metric == "per_watt":
            return self.phase.per_watt if self.phase is not None else None
        if metric == "efficiency":
            return self.scaling.vs_one_server or self.scaling.vs_one_gpu
        if isinstance(result, ModelResult):
            return throughput(result)
        if result.tflops is not None:
            return result.tflops
        if result.gbps is not None:
            return result.gbps
        return 1 / result.median_s if result.median_s else None

    @property
    def noisy(self) -> bool:
        """Its spread is too large for a ratio made from it to tell servers apart."""
        result = self.result
        if result.error is not None:
            return False
        if isinstance(result, KernelResult):
            return formulas.noisy(result.median_s, result.spread_s)
        rate = throughput(result)
        if not (rate and result.spread):
            return False
        return formulas.noisy(rate, result.spread)

    @property
    def implausible(self) -> bool:
        """A scaling efficiency above what the hardware can give: shown flagged."""
        efficiency = self.value("efficiency")
        return efficiency is not None and efficiency > formulas.IMPLAUSIBLE_EFFICIENCY

    def unit(self, metric: Metric) -> str:
        """What its figure counts in: rows are sorted among those counting the same."""
        result = self.result
        if metric == "efficiency":
            return "%"
        if isinstance(result, ModelResult):
            return throughput_unit(result) + ("/W" if metric == "per_watt" else "")
        unit = (
            "FLOP/s" if result.tflops is not None else "B/s" if result.gbps is not None else "1/s"
        )
        return unit + ("/W" if metric == "per_watt" else "")

    def missing(self, metric: Metric) -> str:
        """Why a figure is absent, in a few words."""
        result = self.result
        if result.error is not None:
            return "error"
        if metric == "per_watt" and isinstance(result, KernelResult):
            if result.energy_j is None:
                return "no energy run"
            return "too short"
        return "–"

    def reference_ratio(self) -> float | None:
        result = self.result
        if result.error is not None:
            return None
        if isinstance(result, KernelResult):
            return result.ratio
        if result.images_per_s and result.reference_images_per_s:
            return result.images_per_s / result.reference_images_per_s
        return None


@dataclass
class Row:
    key: tuple[object, ...]
    label: str
    kind: Literal["kernel", "model"]
    order: int
    cells: dict[str, Cell] = field(default_factory=dict)

    def noisy(self, column: str, baseline: str) -> bool:
        """Whether the ratio in `column` rests on a noisy figure (its own or the baseline's)."""
        cells = [self.cells.get(column), self.cells.get(baseline)]
        return any(cell is not None and cell.noisy for cell in cells)

    def ratio(self, column: str, baseline: str, metric: Metric) -> float | None:
        """This row's figure in `column` over the baseline's: another column, or REFERENCE."""
        cell = self.cells.get(column)
        if cell is None:
            return None
        if baseline == REFERENCE:
            return cell.reference_ratio() if metric == "rate" else None
        if baseline == column:
            return None
        base = self.cells.get(baseline)
        mine = cell.value(metric)
        theirs = base.value(metric) if base is not None else None
        return mine / theirs if mine is not None and theirs else None


def kernel_row(result: KernelResult) -> tuple[tuple[object, ...], str]:
    key = ("kernel", result.framework, result.kind, result.shape, result.direction,
           result.precision)  # fmt: skip
    label = f"{result.kind} {result.shape} {result.direction} {result.precision}"
    if result.framework != "torch":
        label += f" ({result.framework})"
    return key, label


def model_row(result: ModelResult) -> tuple[tuple[object, ...], str]:
    key = ("model", result.framework, result.model, result.precision, result.batch,
           result.image_size, result.data, result.seq_len, result.parallel)  # fmt: skip
    label = f"{result.model} {result.precision} batch {result.batch}"
    if result.seq_len is not None:
        label += f" seq {result.seq_len} {result.parallel or 'ddp'}"
    elif result.image_size != 224:
        label += f" {result.image_size}px"
    if result.framework != "torch":
        label += f" ({result.framework})"
    return key, label


def kernel_column(server: str, result: KernelResult) -> str:
    """The server's name, with "· CPU" for a result its CPU measured: never read as its GPUs'."""
    return f"{server} · CPU" if result.device == "cpu" else server


def model_column(server: str, result: ModelResult) -> str:
    unit = "GPU" if result.device == "cuda" else "proc"
    count = counted(result.gpus, unit)
    if result.servers > 1:
        return f"{result.servers} servers · {count}"
    return f"{server} · {count}"


def server_names(fleet: Fleet) -> dict[str, str]:
    """A short name per source: its hostname, or hostname@source where two hostnames agree
    (as `dltui record` names them), or where those sources share an address past a "/", only
    what tells them apart (recordings replayed side by side: "monday/gpu:7070" and
    "friday/gpu:7070" are "monday" and "friday")."""
    hostnames = [server.name for server in fleet.servers.values()]
    names = {source: server.name for source, server in fleet.servers.items()}
    shared = [source for source, server in fleet.servers.items()
              if hostnames.count(server.name) > 1]  # fmt: skip
    tails = {source.partition("/")[2] for source in shared}
    short = {source: source.partition("/")[0] for source in shared}
    if len(tails) == 1 and "" not in tails and len(set(short.values())) == len(short):
        return names | short
    return names | {source: f"{names[source]}@{source}" for source in shared}


@dataclass
class Comparison:
    rows: list[Row]
    columns: list[str]

    def sorted_rows(self, column: str | None, metric: Metric, descending: bool) -> list[Row]:
        """In the order the benchmarks ran, or by one column's figure within each unit
        (TFLOP/s among TFLOP/s, GB/s among GB/s: the units in the order they first ran,
        missing figures last in each)."""
        if column is None:
            return sorted(self.rows, key=lambda row: row.order, reverse=descending)
        units: dict[str, int] = {}
        for row in sorted(self.rows, key=lambda row: row.order):
            any_cell = row.cells.get(column) or next(iter(row.cells.values()))
            units.setdefault(any_cell.unit(metric), len(units))

        def key(row: Row) -> tuple[int, float]:
            cell = row.cells.get(column)
            group = units[(cell or next(iter(row.cells.values()))).unit(metric)]
            value = cell.value(metric) if cell is not None else None
            if value is None:
                return group, float("inf")
            return group, -value if descending else value

        return sorted(self.rows, key=key)

    def records(self, baseline: str) -> list[dict[str, object]]:
        """Every cell as a flat record: what ran, where, the figures and the phase's means."""
        out = []
        for row in self.rows:
            for column, cell in row.cells.items():
                out.append(_record(row, column, cell, baseline))
        return out


def results_by_server(
    fleet: Fleet,
) -> tuple[list[tuple[str, KernelResult]], list[tuple[str, ModelResult]]]:
    """Every result with its server's short name, the jobs in the order they started (so a
    later run of the same benchmark comes later, as in a recording)."""
    names = server_names(fleet)
    jobs = [(names[source], job) for source, server in fleet.servers.items()
            for job in server.jobs.values()]  # fmt: skip
    jobs.sort(key=lambda item: item[1].started or 0.0)
    kernels = [(name, result) for name, job in jobs for result in job.results]
    models = [(name, result) for name, job in jobs for result in job.model_results]
    return kernels, models


def build(fleet: Fleet) -> Comparison:
    names = server_names(fleet)
    phases = {id(phase.result): phase for phase in fleet.phases.finished()}
    models: list[tuple[str, ModelResult]] = []
    rows: dict[tuple[object, ...], Row] = {}
    columns: dict[str, None] = {}

    def place(
        key: tuple[object, ...], label: str, kind: Literal["kernel", "model"], cell: Cell
    ) -> None:
        row = rows.get(key)
        if row is None:
            row = rows[key] = Row(key, label, kind, len(rows))
        row.cells[cell.column] = cell  # the latest run of a benchmark in a column wins
        columns.setdefault(cell.column)

    model_cells: list[tuple[tuple[object, ...], str, Cell]] = []
    for source, server in fleet.servers.items():
        for job in server.jobs.values():
            for result in job.results:
                key, label = kernel_row(result)
                cell = Cell(kernel_column(names[source], result), result, phases.get(id(result)))
                place(key, label, "kernel", cell)
            for model in job.model_results:
                models.append((source, model))
                key, label = model_row(model)
                cell = Cell(model_column(names[source], model), model, phases.get(id(model)))
                model_cells.append((key, label, cell))
    # Efficiency is judged among all the fleet's training results, so it is derived last.
    for (key, label, cell), scaled in zip(model_cells, scaling(models), strict=True):
        cell.scaling = scaled
        place(key, label, "model", cell)
    return Comparison(list(rows.values()), list(columns))


def _record(row: Row, column: str, cell: Cell, baseline: str) -> dict[str, object]:
    result = cell.result
    record: dict[str, object] = {"column": column, "benchmark": row.label}
    if isinstance(result, KernelResult):
        record |= {"framework": result.framework, "kind": result.kind, "shape": result.shape,
                   "direction": result.direction, "precision": result.precision,
                   "device": result.device, "median_s": result.median_s,
                   "spread_s": result.spread_s, "tflops": result.tflops, "gbps": result.gbps,
                   "busbw_gbps": result.busbw_gbps, "backend": result.backend,
                   "reference_gpu": result.reference_gpu}  # fmt: skip
    else:
        record |= {"framework": result.framework, "model": result.model,
                   "precision": result.precision, "device": result.device, "gpus": result.gpus,
                   "servers": result.servers, "batch": result.batch,
                   "images_per_s": result.images_per_s, "spread": result.spread,
                   "seq_len": result.seq_len, "parallel": result.parallel,
                   "tokens_per_s": result.tokens_per_s, "mfu": result.mfu,
                   "reference": result.reference,
                   "efficiency_vs_one_gpu": cell.scaling.vs_one_gpu,
                   "efficiency_vs_one_server": cell.scaling.vs_one_server}  # fmt: skip
    record["error"] = result.error
    record["baseline"] = baseline
    record["ratio"] = row.ratio(column, baseline, "rate")
    phase = cell.phase
    if phase is not None and phase.end is not None:
        record |= {"seconds": phase.seconds, "watts": phase.watts,
                   "per_watt": phase.per_watt, **phase.telemetry}  # fmt: skip
    return record


def _csv(records: list[dict[str, object]]) -> str:
    names = list(dict.fromkeys(name for record in records for name in record))
    out = io.StringIO()
    writer = csv.DictWriter(out, names)
    writer.writeheader()
    writer.writerows(records)
    return out.getvalue()


WRITERS: dict[str, Callable[[list[dict[str, object]]], str]] = {
    ".csv": _csv,
    ".json": lambda records: json.dumps(records, indent=2) + "\n",
}


def export(comparison: Comparison, baseline: str, path: Path) -> int:
    """Write every cell to `path` (.csv or .json, by its suffix); never overwrites a file.
    The number of records written; ExportError says why nothing was."""
    writer = WRITERS.get(path.suffix.lower())
    if writer is None:
        raise ExportError(f"{path.name}: name a .csv or a .json file")
    records = comparison.records(baseline)
    if not records:
        raise ExportError("no results to export yet")
    try:
        with path.open("x") as file:
            file.write(writer(records))
    except FileExistsError:
        raise ExportError(f"{path} exists; choose another name") from None
    except OSError as exc:
        raise ExportError(f"cannot write {path}: {exc.strerror}") from None
    return len(records)
