"""`dltui serve [--port N] [ARGS ...]`: the TUI on a local web page (textual-serve)."""

from __future__ import annotations

import argparse
import shlex
import sys

from dltui.commands import exit_status
from dltui.errors import UsageError

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dltui serve",
        description="The TUI on a web page (textual-serve): each browser tab runs `dltui ARGS`. "
        "Local only: from elsewhere, forward the port over SSH (ssh -L 8000:127.0.0.1:8000 HOST).",
        epilog=exit_status.epilog(
            exit_status.OK,
            exit_status.FAILED,
            exit_status.USAGE,
            before="examples: dltui serve · dltui serve gpu-01:7070 gpu-02:7070 · "
            "dltui serve replay monday.dlrec",
        ),
        formatter_class=exit_status.Paragraphs,
    )
    parser.add_argument("--host", default="127.0.0.1", help="loopback only (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="default 8000")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                        help="what each page runs: agents, or 'replay FILE ...'")  # fmt: skip
    return parser


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    args = parser.parse_args(argv)
    if args.host not in LOOPBACK:
        # The page can start benchmarks on every agent it shows: never offer it to a network.
        raise UsageError(f"--host {args.host}: the page serves only loopback; use SSH forwarding")
    if not 0 < args.port < 65536:
        raise UsageError(f"--port must be 1-65535, got {args.port}")
    try:
        from textual_serve.server import Server
    except ImportError as exc:
        why = f"dltui serve needs textual-serve (pip install 'dltui[tui]'): {exc}"
        raise UsageError(why) from exc
    command = shlex.join([sys.executable, "-m", "dltui", *args.args])
    Server(command, host=args.host, port=args.port, title="dltui").serve()
    return exit_status.OK
