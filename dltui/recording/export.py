"""`dltui export`: a recording's telemetry and benchmark results as tidy tables.

Telemetry is long-form, one row per value (recording, server, time, scope, gpu, field, value):
the shape pandas, R and spreadsheets pivot from. Kernel results are one row per timed case;
training runs one row per run in `models` (with the scaling efficiency derived from the runs
beside it), and their per-step times long-form in `steps`, one row per step. Health events and
alerts are one row each in `events`; each GPU process seen, with its owner and place, one row
in `processes` (health_tables.py). CSV and Parquet
write one file per table to a directory; JSON writes one document with a key per table.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dltui.errors import UsageError
from dltui.plans.scaling import scaling
from dltui.protocol.messages import Event, JobResult, ModelResult, Sample, Welcome, to_plain
from dltui.recording.health_tables import EVENT_COLUMNS, PROCESS_COLUMNS, ProcessTable, event_row
from dltui.recording.reader import RecordingReader

TELEMETRY_COLUMNS = ("recording", "server", "hostname", "time", "elapsed", "scope", "gpu",
                     "field", "value")  # fmt: skip
STEP_COLUMNS = ("recording", "server", "job", "model", "gpus", "servers", "step", "seconds")
FORMATS = ("csv", "json", "parquet")
TABLES = ("telemetry", "results", "models", "steps", "events", "processes")
Row = dict[str, Any]
"""One row of a table: column -> value."""


class TableExportError(UsageError):
    """The tables cannot be written as asked: an unknown format, or one without its library."""


def tables(path: Path) -> dict[str, list[Row]]:
    """The tables (TABLES) of one recording."""
    reader = RecordingReader(path)
    found: dict[str, list[Row]] = {name: [] for name in TABLES}
    runs: list[tuple[str, ModelResult]] = []
    hostnames: dict[str, str] = {}
    processes = ProcessTable()
    for record in reader:
        message, server = record.message, record.source
        if isinstance(message, Welcome):
            hostnames[server] = message.inventory.hostname
        elif isinstance(message, Sample):
            found["telemetry"].extend(_sample_rows(path.stem, server, hostnames, message,
                                                   reader.header.started))  # fmt: skip
            processes.observe(path.stem, server, hostnames.get(server, ""), message)
        elif isinstance(message, Event):
            found["events"].append(event_row(path.stem, server, hostnames.get(server, ""),
                                             message, reader.header.started))  # fmt: skip
        elif isinstance(message, JobResult):
            row = {"recording": path.stem, "server": server,
                   "hostname": hostnames.get(server, ""), "job": message.job,
                   "received": record.received}  # fmt: skip
            if message.result is not None:
                plain = to_plain(message.result)
                plain["params"] = json.dumps(plain["params"], sort_keys=True)
                found["results"].append(row | plain)
            if message.model is not None:
                runs.append((server, message.model))
                found["models"].append(row | _model_row(message.model))
                found["steps"].extend(_step_rows(path.stem, server, message.job, message.model))
    found["processes"] = processes.rows()
    for row, efficiency in zip(found["models"], scaling(runs), strict=True):
        row["efficiency_vs_one_gpu"] = efficiency.vs_one_gpu
        row["efficiency_vs_one_server"] = efficiency.vs_one_server
    if note := reader.damage_report():
        print(f"dltui export: {note}", file=sys.stderr)
    return found


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


def _sample_rows(
    recording: str, server: str, hostnames: dict[str, str], sample: Sample, started: float
) -> Iterator[Row]:
    base = {"recording": recording, "server": server, "hostname": hostnames.get(server, ""),
            "time": sample.wall, "elapsed": round(sample.wall - started, 3)}  # fmt: skip
    for name, value in sample.host.values.items():
        yield base | {"scope": "host", "gpu": None, "field": name, "value": value}
    for gpu in sample.gpus:
        for name, value in gpu.values.items():
            yield base | {"scope": "gpu", "gpu": gpu.index, "field": name, "value": value}


def export(paths: list[Path], fmt: str, out: Path) -> dict[str, int]:
    """Write the tables of every recording; returns the rows of each table."""
    if fmt not in FORMATS:
        raise TableExportError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    found: dict[str, list[Row]] = {name: [] for name in TABLES}
    for path in paths:
        for name, rows in tables(path).items():
            found[name] += rows
    if fmt == "json":
        out.write_text(json.dumps(found) + "\n")
    elif fmt == "csv":
        out.mkdir(parents=True, exist_ok=True)
        _write_csv(out / "telemetry.csv", found["telemetry"], TELEMETRY_COLUMNS)
        _write_csv(out / "steps.csv", found["steps"], STEP_COLUMNS)
        _write_csv(out / "events.csv", found["events"], EVENT_COLUMNS)
        _write_csv(out / "processes.csv", found["processes"], PROCESS_COLUMNS)
        for name in ("results", "models"):
            rows = found[name]
            _write_csv(out / f"{name}.csv", rows, tuple(rows[0]) if rows else ("job",))
    else:
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise TableExportError("Parquet needs pyarrow: pip install pyarrow") from exc
        out.mkdir(parents=True, exist_ok=True)
        for name, rows in found.items():
            pq.write_table(pa.Table.from_pylist(rows), out / f"{name}.parquet")
    return {name: len(rows) for name, rows in found.items()}


def _write_csv(path: Path, rows: list[Row], columns: tuple[str, ...]) -> None:
    with open(path, "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
