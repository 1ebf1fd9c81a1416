"""`dltui export FILE --format csv|json|parquet|openmetrics -o OUT`: a recording as tidy tables,
or as OpenMetrics for `promtool tsdb create-blocks-from openmetrics`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dltui.commands import exit_status
from dltui.errors import UsageError
from dltui.formatting import counted
from dltui.outfiles import WriteFailed, unwritable
from dltui.recording.export import FOLDER_FORMATS, FORMATS, export
from dltui.recording.reader import is_recording


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dltui export",
        description="Telemetry and benchmark results of recordings as tidy tables (csv, json, "
        "parquet), or as OpenMetrics text for promtool to import into Prometheus.",
        epilog=exit_status.epilog(
            exit_status.OK, exit_status.FAILED, exit_status.USAGE, exit_status.WRITE_FAILED
        ),
    )
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE")
    parser.add_argument("--format", choices=FORMATS, default="csv")
    parser.add_argument(
        "-o", "--output", type=Path, required=True,
        help="a directory (csv, parquet) or a file (json, openmetrics)",
    )  # fmt: skip
    return parser


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    args = parser.parse_args(argv)
    out = args.output
    if (problem := unwritable(out, folder=args.format in FOLDER_FORMATS)) is not None:
        raise UsageError(f"cannot write {out}: {problem}")
    if is_recording(out):  # `-o monday.dlrec friday.dlrec` would lose a session for good
        raise UsageError(f"{out} is a recording: export writes its tables elsewhere")
    try:
        rows = export(args.files, args.format, out, _say)
    except OSError as exc:
        raise WriteFailed(f"cannot write {out}: {exc.strerror or exc}") from None
    results = counted(rows["results"], "kernel result")
    runs = counted(rows["models"], "training run")
    if args.format == "openmetrics":
        points = counted(rows["telemetry"], "point")
        print(f"dltui export: {points}, {results} and {runs} among them → {args.output}")
        return exit_status.OK
    what = [counted(rows["telemetry"], "telemetry row"), results,
            f"{runs} ({counted(rows['steps'], 'step')})", counted(rows["events"], "event"),
            counted(rows["processes"], "GPU process", "GPU processes")]  # fmt: skip
    print(f"dltui export: {', '.join(what)} → {args.output}")
    return exit_status.OK


def _say(note: str) -> None:
    print(f"dltui export: {note}", file=sys.stderr)
