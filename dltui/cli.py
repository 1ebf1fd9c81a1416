"""The one entry point: `dltui [AGENT ...]` opens the TUI; sub-commands do the rest.

Each command is a module of `dltui.commands`, imported only when it runs, so `dltui agent`
never loads Textual and `dltui` never loads a deep-learning framework. Every error dltui
means to say reaches the user here, in one place: a usage error with the command's usage,
any other in one line, each with its exit status.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Protocol, cast

from dltui.errors import DltuiError, UsageError

COMMANDS = {
    "agent": "dltui.commands.agent",
    "probe": "dltui.commands.probe",
    "bench": "dltui.commands.bench",
    "record": "dltui.commands.record",
    "replay": "dltui.commands.replay",
    "export": "dltui.commands.export",
    "report": "dltui.commands.report",
    "serve": "dltui.commands.serve",
}
TUI = "dltui.commands.tui"
"""`dltui [AGENT ...]`: what runs when no command is named."""


class Command(Protocol):
    def parser(self) -> argparse.ArgumentParser: ...

    def run(self, parser: argparse.ArgumentParser, argv: list[str]) -> int: ...


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in COMMANDS:
        module, argv = COMMANDS[argv[0]], argv[1:]
    else:
        module = TUI
    command = cast(Command, importlib.import_module(module))
    parser = command.parser()
    try:
        return command.run(parser, argv)
    except UsageError as exc:
        parser.error(str(exc))
    except DltuiError as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return exc.exit_status
