"""`dltui [AGENT ...]`: the TUI on these agents; with none, on an agent started for this machine."""

from __future__ import annotations

import argparse

from dltui.client.target import Target
from dltui.commands import exit_status, listing
from dltui.commands.options import (
    add_connection_options,
    add_rate_option,
    apply_connection_options,
    secret_option,
    target_argument,
)
from dltui.errors import DltuiError

EPILOG = f"""\
commands:
{listing()}

With no AGENT, dltui starts an agent for this machine and shows it."""


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dltui",
        description="Compare deep-learning servers live: telemetry and benchmarks side by side.",
        epilog=exit_status.epilog(
            exit_status.OK,
            exit_status.FAILED,
            exit_status.USAGE,
            exit_status.INTERRUPTED,
            before=EPILOG,
        ),
        formatter_class=exit_status.Paragraphs,
    )
    parser.add_argument(
        "agents",
        nargs="*",
        type=target_argument,
        metavar="AGENT",
        help="see 'reaching agents' below",
    )
    add_rate_option(parser)
    add_connection_options(parser)
    return parser


class NoTerminal(DltuiError):
    """The TUI was started without a terminal to draw on."""

    kind = "usage"


def check_terminal() -> None:
    """Say so in one line, rather than write escape codes into a file or spin on a closed
    input: NoTerminal when stdin or stdout is not a terminal."""
    from dltui.tui.terminal import needs_terminal

    if (why := needs_terminal()) is not None:
        raise NoTerminal(why)


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    args = parser.parse_args(argv)
    secret = secret_option(args.secret_file)
    targets = apply_connection_options(args, args.agents or [Target("local")])  # each server once
    check_terminal()
    from dltui.tui.app import create_app
    from dltui.tui.terminal import run_to_the_end

    return run_to_the_end(create_app(targets, secret=secret, rate_hz=args.rate))
