"""`dltui export`: a recording's telemetry and benchmark results as tidy tables.

Telemetry is long-form, one row per value (recording, server, time, scope, gpu, field, value):
the shape pandas, R and spreadsheets pivot from. Results are one row per timed case. CSV and
Parquet write the two tables to a directory; JSON writes one document.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from dltui.protocol.messages import JobResult, Sample, Welcome, to_plain
from dltui.recording.reader import RecordingReader

TELEMETRY_COLUMNS = ("recording", "server", "hostname", "time", "elapsed", "scope", "gpu",
                     "field", "value")  # fmt: skip
FORMATS = ("csv", "json", "parquet")


class ExportError(Exception):
    pass


def tables(path: Path) -> tuple[list[dict], list[dict]]:
    """(telemetry rows, result rows) of one recording."""
    reader = RecordingReader(path)
    telemetry: list[dict] = []
    results: list[dict] = []
    hostnames: dict[str, str] = {}
    for record in reader:
        message = record.message
        if isinstance(message, Welcome):
            hostnames[record.source] = message.inventory.hostname
        elif isinstance(message, Sample):
            telemetry.extend(_sample_rows(path.stem, record.source, hostnames, message,
                                          reader.header.started))  # fmt: skip
        elif isinstance(message, JobResult) and message.result is not None:
            row = {"recording": path.stem, "server": record.source,
                   "hostname": hostnames.get(record.source, ""), "job": message.job,
                   "received": record.received}  # fmt: skip
            plain = to_plain(message.result)
            plain["params"] = json.dumps(plain["params"], sort_keys=True)
            results.append(row | plain)
    if note := reader.damage_report():
        print(f"dltui export: {note}", file=sys.stderr)
    return telemetry, results


def _sample_rows(
    recording: str, server: str, hostnames: dict[str, str], sample: Sample, started: float
) -> Iterator[dict]:
    base = {"recording": recording, "server": server, "hostname": hostnames.get(server, ""),
            "time": sample.wall, "elapsed": round(sample.wall - started, 3)}  # fmt: skip
    for name, value in sample.host.values.items():
        yield base | {"scope": "host", "gpu": None, "field": name, "value": value}
    for gpu in sample.gpus:
        for name, value in gpu.values.items():
            yield base | {"scope": "gpu", "gpu": gpu.index, "field": name, "value": value}


def export(paths: list[Path], fmt: str, out: Path) -> tuple[int, int]:
    """Write the tables of every recording; returns (telemetry rows, result rows)."""
    telemetry: list[dict] = []
    results: list[dict] = []
    for path in paths:
        rows, found = tables(path)
        telemetry += rows
        results += found
    if fmt == "json":
        out.write_text(json.dumps({"telemetry": telemetry, "results": results}) + "\n")
    elif fmt == "csv":
        out.mkdir(parents=True, exist_ok=True)
        _write_csv(out / "telemetry.csv", telemetry, TELEMETRY_COLUMNS)
        _write_csv(out / "results.csv", results, tuple(results[0]) if results else ("job",))
    elif fmt == "parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise ExportError("Parquet needs pyarrow: pip install pyarrow") from exc
        out.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(telemetry), out / "telemetry.parquet")
        pq.write_table(pa.Table.from_pylist(results), out / "results.parquet")
    else:
        raise ExportError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    return len(telemetry), len(results)


def _write_csv(path: Path, rows: list[dict], columns: tuple[str, ...]) -> None:
    with open(path, "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
