"""The tidy tables written as they are read: CSV, JSON and Parquet writers that take the telemetry
a sample at a time and hold at most FLUSH_ROWS rows before writing them out.

Telemetry rows are made as text (or as columns, for Parquet) a sample at a time: the fields
shared by a sample's rows are formatted once, strings are quoted once per distinct string, and
values are written as Python writes floats (the shortest text that reads back the same), which
is what the csv and json modules write too. The small tables (results, training runs, steps,
events, processes) come at the end, through the csv, json and pyarrow modules themselves.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, TextIO

from dltui.outfiles import Replacement
from dltui.protocol.messages import Sample

TELEMETRY_COLUMNS = ("recording", "server", "hostname", "time", "elapsed", "scope", "gpu",
                     "field", "value")  # fmt: skip
FLUSH_ROWS = 1 << 16
"""Rows held before they are written: a few MB, whatever the length of the recording."""
Row = dict[str, Any]


class TelemetryWriter:
    """Takes each sample's rows as the recording is read, then the small tables at the end."""

    rows = 0

    def sample(self, recording: str, server: str, hostname: str, sample: Sample,
               started: float) -> None:  # fmt: skip
        raise NotImplementedError

    def finish(self, small: dict[str, list[Row]], columns: dict[str, tuple[str, ...]]) -> None:
        """Write what is held and the small tables (`columns`: those whose columns are fixed;
        the others take their first row's)."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


def _elapsed(sample: Sample, started: float) -> float:
    return round(sample.wall - started, 3)


# --- CSV --------------------------------------------------------------------------------------


def _csv_text(text: str) -> str:
    """`text` as the csv module writes it (minimal quoting)."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="").writerow([text])
    return buffer.getvalue()


class _Quoted(dict[str, str]):
    """Each distinct string as CSV writes it, quoted once."""

    def __missing__(self, text: str) -> str:
        quoted = self[text] = _csv_text(text)
        return quoted


class CsvWriter(TelemetryWriter):
    """A directory of one CSV file per table."""

    def __init__(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out = out
        self._telemetry = Replacement(out / "telemetry.csv")
        self._file: TextIO = open(self._telemetry.path, "w", newline="", encoding="utf-8")  # noqa: SIM115 (close())
        self._file.write(",".join(TELEMETRY_COLUMNS) + "\r\n")
        self._lines: list[str] = []
        self._held = 0
        self._quoted = _Quoted()
        self._heads: dict[tuple[str, str, str], str] = {}

    def sample(self, recording: str, server: str, hostname: str, sample: Sample,
               started: float) -> None:  # fmt: skip
        key = (recording, server, hostname)
        head = self._heads.get(key)
        if head is None:
            head = self._heads[key] = "".join(f"{self._quoted[part]}," for part in key)
        start = f"{head}{sample.wall!r},{_elapsed(sample, started)!r},"
        quoted = self._quoted
        # The rows of one scope are `scope + tail` each: scope + scope.join(tails), in C.
        for scope, values in (
            (start + "host,,", sample.host.values),
            *((f"{start}gpu,{gpu.index},", gpu.values) for gpu in sample.gpus),
        ):
            if values:
                tails = [f"{quoted[name]},{value!r}\r\n" for name, value in values.items()]
                self._lines.append(scope + scope.join(tails))
                self._held += len(tails)
        if self._held >= FLUSH_ROWS:
            self._flush()

    def _flush(self) -> None:
        self.rows += self._held
        self._held = 0
        self._file.write("".join(self._lines))
        self._lines.clear()

    def finish(self, small: dict[str, list[Row]], columns: dict[str, tuple[str, ...]]) -> None:
        self._flush()
        self._file.close()
        self._telemetry.commit()
        for name, rows in small.items():
            fixed = columns.get(name) or (tuple(rows[0]) if rows else ("job",))
            _write_csv(self.out / f"{name}.csv", rows, fixed)

    def close(self) -> None:
        self._file.close()
        self._telemetry.discard()  # unless finished


def _write_csv(path: Path, rows: list[Row], columns: tuple[str, ...]) -> None:
    with Replacement(path) as replacement, open(replacement.path, "w", newline="",
                                                 encoding="utf-8") as file:  # fmt: skip
        writer = csv.DictWriter(file, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


# --- JSON -------------------------------------------------------------------------------------


class _JsonStrings(dict[str, str]):
    """Each distinct string as JSON, encoded once."""

    def __missing__(self, text: str) -> str:
        encoded = self[text] = json.dumps(text)
        return encoded


def _json_number(value: float) -> str:
    text = repr(value)
    # repr writes nan and inf where JSON (as Python's json writes it) has NaN and Infinity.
    return json.dumps(value) if text[-1] in "nf" else text


class JsonWriter(TelemetryWriter):
    """One document: {"telemetry": [...], "results": [...], "models": [...], "steps": [...],
    "events": [...], "processes": [...]}, as json.dumps writes it."""

    def __init__(self, out: Path) -> None:
        self._out = Replacement(out)
        self._file: TextIO = open(self._out.path, "w", encoding="utf-8")  # noqa: SIM115 (close())
        self._file.write('{"telemetry": [')
        self._lines: list[str] = []
        self._held = 0
        self._heads: dict[tuple[str, str, str], str] = {}
        self._names = _JsonStrings()

    def sample(self, recording: str, server: str, hostname: str, sample: Sample,
               started: float) -> None:  # fmt: skip
        key = (recording, server, hostname)
        head = self._heads.get(key)
        if head is None:
            head = self._heads[key] = "".join(
                f'"{column}": {json.dumps(part)}, ' for column, part in zip(
                    ("recording", "server", "hostname"), key, strict=True)
            )  # fmt: skip
        start = f'{{{head}"time": {sample.wall!r}, "elapsed": {_elapsed(sample, started)!r}, '
        names = self._names
        scopes = ((start + '"scope": "host", "gpu": null, "field": ', sample.host.values),
                  *((f'{start}"scope": "gpu", "gpu": {gpu.index}, "field": ', gpu.values)
                    for gpu in sample.gpus))  # fmt: skip
        for scope, values in scopes:
            if values:
                tails = [f'{names[name]}, "value": {_json_number(value)}}}'
                         for name, value in values.items()]  # fmt: skip
                self._lines.append(scope + (", " + scope).join(tails))
                self._held += len(tails)
        if self._held >= FLUSH_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self._lines:
            self._file.write((", " if self.rows else "") + ", ".join(self._lines))
            self.rows += self._held
            self._held = 0
            self._lines.clear()

    def finish(self, small: dict[str, list[Row]], columns: dict[str, tuple[str, ...]]) -> None:
        self._flush()
        self._file.write("]")
        for name, rows in small.items():
            self._file.write(f", {json.dumps(name)}: {json.dumps(rows)}")
        self._file.write("}\n")
        self._file.close()
        self._out.commit()

    def close(self) -> None:
        self._file.close()
        self._out.discard()  # unless finished


# --- Parquet ----------------------------------------------------------------------------------


class ParquetWriter(TelemetryWriter):
    """A directory of one Parquet file per table; telemetry in row groups of FLUSH_ROWS."""

    def __init__(self, out: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        out.mkdir(parents=True, exist_ok=True)
        self.out = out
        self._pa, self._pq = pa, pq
        text, number = pa.string(), pa.float64()
        self._schema = pa.schema([
            ("recording", text), ("server", text), ("hostname", text), ("time", number),
            ("elapsed", number), ("scope", text), ("gpu", pa.int64()), ("field", text),
            ("value", number),
        ])  # fmt: skip
        self._telemetry = Replacement(out / "telemetry.parquet")
        self._writer = pq.ParquetWriter(self._telemetry.path, self._schema)
        self._columns: list[list[Any]] = [[] for _ in TELEMETRY_COLUMNS]

    def sample(self, recording: str, server: str, hostname: str, sample: Sample,
               started: float) -> None:  # fmt: skip
        recordings, servers, hostnames, times, elapsed, scopes, gpus, fields, values = self._columns
        count = len(sample.host.values) + sum(len(gpu.values) for gpu in sample.gpus)
        recordings += [recording] * count
        servers += [server] * count
        hostnames += [hostname] * count
        times += [sample.wall] * count
        elapsed += [_elapsed(sample, started)] * count
        host = len(sample.host.values)
        scopes += ["host"] * host
        gpus += [None] * host
        fields += sample.host.values
        values += sample.host.values.values()
        for gpu in sample.gpus:
            scopes += ["gpu"] * len(gpu.values)
            gpus += [gpu.index] * len(gpu.values)
            fields += gpu.values
            values += gpu.values.values()
        if len(fields) >= FLUSH_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self._columns[0]:
            types = [kind.type for kind in self._schema]
            arrays = [self._pa.array(column, type=kind)
                      for column, kind in zip(self._columns, types, strict=True)]  # fmt: skip
            self._writer.write_batch(self._pa.record_batch(arrays, schema=self._schema))
            self.rows += len(self._columns[0])
            for column in self._columns:
                column.clear()

    def finish(self, small: dict[str, list[Row]], columns: dict[str, tuple[str, ...]]) -> None:
        self._flush()
        self._writer.close()
        self._telemetry.commit()
        for name, rows in small.items():
            with Replacement(self.out / f"{name}.parquet") as replacement:
                self._pq.write_table(self._pa.Table.from_pylist(rows), replacement.path)

    def close(self) -> None:
        self._writer.close()
        self._telemetry.discard()  # unless finished
