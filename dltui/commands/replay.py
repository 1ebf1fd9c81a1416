"""`dltui replay FILE [FILE ...]`: recordings in the TUI, side by side."""

from __future__ import annotations

import argparse
from pathlib import Path

from dltui.commands import exit_status


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dltui replay",
        description="Replay recordings in the TUI, side by side, each server named by its file.",
        epilog=exit_status.epilog(
            exit_status.OK, exit_status.FAILED, exit_status.USAGE, exit_status.INTERRUPTED
        ),
    )
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE")
    return parser


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    args = parser.parse_args(argv)
    from dltui.commands.tui import check_terminal
    from dltui.tui.replay_app import create_replay_app
    from dltui.tui.terminal import run_to_the_end

    app = create_replay_app(args.files)  # a file that is no recording is said first
    check_terminal()
    return run_to_the_end(app)
