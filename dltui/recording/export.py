"""`dltui export`: a recording's telemetry and benchmark results as tidy tables, or as OpenMetrics.

Telemetry is long-form, one row per value (recording, server, time, scope, gpu, field, value):
the shape pandas, R and spreadsheets pivot from. Kernel results are one row per timed case;
training runs one row per run in `models` (with the scaling efficiency derived from the runs
beside it), and their per-step times long-form in `steps`, one row per step. Health events and
alerts are one row each in `events`; each GPU process seen, with its owner and place, one row
in `processes` (health_tables.py). CSV and Parquet write one file per table to a directory;
JSON writes one document with a key per table; OpenMetrics writes one file for
`promtool tsdb create-blocks-from openmetrics` (openmetrics.py).

Every format streams: telemetry rows are written as the recording is read, a chunk at a time, so
memory holds a chunk, not the file (a day of an 8-GPU server at 10 Hz is 150 million rows).
Results, training runs, steps, events and processes are a few per benchmark case, event or
process, and are kept until the end.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dltui.errors import UsageError
from dltui.plans.scaling import scaling
from dltui.protocol.bench_results import ModelResult
from dltui.protocol.messages import Event, JobResult, Sample, Welcome
from dltui.protocol.wire import to_plain
from dltui.recording.health_tables import EVENT_COLUMNS, PROCESS_COLUMNS, ProcessTable, event_row
from dltui.recording.reader import Say, recording_names, timed_records
from dltui.recording.table_writers import (
    CsvWriter,
    JsonWriter,
    ParquetWriter,
    TelemetryWriter,
)

STEP_COLUMNS = ("recording", "server", "job", "model", "gpus", "servers", "step", "seconds")
FORMATS = ("csv", "json", "parquet", "openmetrics")
FOLDER_FORMATS = ("csv", "parquet")
"""Formats written as a folder of one file a table; the others are one file."""
TABLES = ("telemetry", "results", "models", "steps", "events", "processes")
SMALL_TABLES = TABLES[1:]
FIXED_COLUMNS = {"steps": STEP_COLUMNS, "events": EVENT_COLUMNS, "processes": PROCESS_COLUMNS}
"""The small tables whose columns do not depend on their rows."""
Row = dict[str, Any]
"""One row of a table: column -> value."""


class TableExportError(UsageError):
    """The tables cannot be written as asked: an unknown format, or one without its library."""


def export(paths: list[Path], fmt: str, out: Path, say: Say) -> dict[str, int]:
    """Write the tables of every recording; returns the rows of each table (OpenMetrics: its
    points as `telemetry`, and the results among them). A damaged recording's note goes to
    `say`."""
    if fmt not in FORMATS:
        raise TableExportError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    if fmt == "openmetrics":
        from dltui.recording.openmetrics import export_openmetrics

        return export_openmetrics(paths, out, say)
    writer = _writer(fmt, out)
    small: dict[str, list[Row]] = {name: [] for name in SMALL_TABLES}
    try:
        for name, path in zip(recording_names(paths), paths, strict=True):
            _tables(path, name, writer, small, say)
        writer.finish(small, FIXED_COLUMNS)
    finally:
        writer.close()
    return {"telemetry": writer.rows} | {name: len(rows) for name, rows in small.items()}


def _writer(fmt: str, out: Path) -> TelemetryWriter:
    if fmt == "csv":
        return CsvWriter(out)
    if fmt == "json":
        return JsonWriter(out)
    try:
        import pyarrow  # noqa: F401
    except ImportError as exc:
        raise TableExportError("Parquet needs pyarrow: pip install pyarrow") from exc
    return ParquetWriter(out)


def _tables(
    path: Path, recording: str, writer: TelemetryWriter, small: dict[str, list[Row]], say: Say
) -> None:
    """One recording's telemetry to `writer`, its other tables' rows added to `small`, each
    row naming it `recording`."""
    hostnames: dict[str, str] = {}
    runs: list[tuple[str, ModelResult]] = []
    models: list[Row] = []
    processes = ProcessTable()
    for record, started in timed_records(path, say):
        message, server = record.message, record.source
        if isinstance(message, Sample):
            writer.sample(recording, server, hostnames.get(server, ""), message, started)
            processes.observe(recording, server, hostnames.get(server, ""), message)
        elif isinstance(message, Welcome):
            hostnames[server] = message.inventory.hostname
        elif isinstance(message, Event):
            small["events"].append(event_row(recording, server, hostnames.get(server, ""),
                                             message, started))  # fmt: skip
        elif isinstance(message, JobResult):
            row = {"recording": recording, "server": server,
                   "hostname": hostnames.get(server, ""), "job": message.job,
                   "received": record.received}  # fmt: skip
            if message.result is not None:
                plain = to_plain(message.result)
                plain["params"] = json.dumps(plain["params"], sort_keys=True)
                small["results"].append(row | plain)
            if message.model is not None:
                runs.append((server, message.model))
                models.append(row | _model_row(message.model))
                small["steps"].extend(_step_rows(recording, server, message.job, message.model))
    small["processes"] += processes.rows()
    for row, efficiency in zip(models, scaling(runs), strict=True):
        row["efficiency_vs_one_gpu"] = efficiency.vs_one_gpu
        row["efficiency_vs_one_server"] = efficiency.vs_one_server
    small["models"] += models


def _model_row(model: ModelResult) -> Row:
    """A training run as one row: its step times go to the `steps` table."""
    plain: Row = to_plain(model)
    del plain["step_times"]
    return plain


def _step_rows(recording: str, server: str, job: str, model: ModelResult) -> Iterator[Row]:
    for step, seconds in enumerate(model.step_times):
        yield {"recording": recording, "server": server, "job": job, "model": model.model,
               "gpus": model.gpus, "servers": model.servers, "step": step,
               "seconds": seconds}  # fmt: skip
