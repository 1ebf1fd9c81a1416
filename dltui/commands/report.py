"""`dltui report FILE [FILE ...] -o DIR`: a Markdown and HTML report with plots."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from dltui.commands import exit_status
from dltui.errors import UsageError
from dltui.outfiles import WriteFailed, unwritable


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dltui report",
        description="A Markdown and HTML report with PNG plots from recordings.",
        epilog=exit_status.epilog(
            exit_status.OK, exit_status.FAILED, exit_status.USAGE, exit_status.WRITE_FAILED
        ),
    )
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="DIR")
    return parser


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    args = parser.parse_args(argv)
    if importlib.util.find_spec("matplotlib") is None:
        raise UsageError("the report needs matplotlib (pip install 'dltui[report]')")
    from dltui.recording.report import write_report

    if (problem := unwritable(args.output, folder=True)) is not None:
        raise UsageError(f"cannot write {args.output}: {problem}")
    try:
        index = write_report(args.files, args.output, _say)
    except OSError as exc:
        raise WriteFailed(f"cannot write {args.output}: {exc.strerror or exc}") from None
    print(f"dltui report: {index} and {index.with_suffix('.html')}")
    return exit_status.OK


def _say(note: str) -> None:
    print(f"dltui report: {note}", file=sys.stderr)
