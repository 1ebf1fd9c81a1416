"""The one entry point: `dltui [AGENT ...]` opens the TUI; sub-commands do the rest.

Each command is a module of `dltui.commands`, imported only when it runs, so `dltui agent`
never loads Textual and `dltui` never loads a deep-learning framework. Every error dltui
means to say reaches the user here, in one place, in one line with a hint where to look: a
usage error (and argparse's own) with exit status 2, any other with its own
(commands/exit_status.py).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import re
import select
import sys
import types
from typing import NoReturn, Protocol, cast

from dltui import version
from dltui.commands import COMMANDS, exit_status
from dltui.errors import DltuiError, UsageError
from dltui.recording import SUFFIX as RECORDING_SUFFIX

TUI = "dltui.commands.tui"
"""`dltui [AGENT ...]`: what runs when no command is named."""


class Command(Protocol):
    def parser(self) -> argparse.ArgumentParser: ...

    def run(self, parser: argparse.ArgumentParser, argv: list[str]) -> int: ...


INVALID_CHOICE = re.compile(r"argument (\S+): invalid choice: '([^']*)' \(choose from (.*)\)")


def _suggest(message: str) -> str:
    """argparse's 'invalid choice' in plainer words, with the nearest choice."""
    found = INVALID_CHOICE.fullmatch(message)
    if found is None:
        return message
    what, word, listed = found.groups()
    choices = [choice.strip(" '") for choice in listed.split(",")]
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    hint = f" — did you mean {close[0]}?" if close else ""
    where = "" if "|" in what else f" for {what}"
    return f"unknown '{word}'{where}{hint} (choose from {', '.join(choices)})"


UNRECOGNIZED = re.compile(r"unrecognized arguments: (.*)")


def _agents_as_options(parser: argparse.ArgumentParser, message: str) -> str:
    """`dltui bench kernels gpu-01`: the TUI, `record` and `probe` take agents as words, `bench`
    as --agent options (its words are kernels|models); say how, where that is what was meant."""
    found = UNRECOGNIZED.fullmatch(message)
    if found is None or not _takes_agent_option(parser):
        return message
    words = found.group(1).split()
    if any(word.startswith("-") for word in words):  # a mistyped option, and perhaps its value
        return message
    return f"{message} (agents are named with --agent: {' '.join(f'--agent {w}' for w in words)})"


def _takes_agent_option(parser: argparse.ArgumentParser) -> bool:
    return "--agent" in parser._option_string_actions or any(
        map(_takes_agent_option, _subcommands(parser).values())
    )


def _one_line(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    """argparse's error, without the usage first: what is wrong, and where to read more."""
    said = _agents_as_options(parser, _suggest(message))
    parser.exit(2, f"{parser.prog}: {said}\n(see {parser.prog} --help)\n")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser's sub-commands by name (`bench`: kernels, models); none for most."""
    return {name: sub for action in parser._actions
            if isinstance(action, argparse._SubParsersAction)
            for name, sub in action.choices.items()}  # fmt: skip


def one_line_errors(parser: argparse.ArgumentParser) -> None:
    """Make this parser and each of its sub-command parsers say errors in one line."""
    parser.error = types.MethodType(_one_line, parser)  # type: ignore[method-assign]
    for sub in _subcommands(parser).values():
        one_line_errors(sub)


def _named_parser(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.ArgumentParser:
    """The sub-command's parser that argv names (`bench models`), so that an error found after
    parsing points to the help that describes what was given."""
    subcommands = _subcommands(parser)
    for at, word in enumerate(argv):
        if word in subcommands:
            return _named_parser(subcommands[word], argv[at + 1 :])
    return parser


def mistyped(argv: list[str]) -> str | None:
    """Why a first word that names no command was not meant as an agent: a near-miss of a
    command's name, or a recording; None when it reads as an agent."""
    if not argv:
        return None
    word = argv[0]
    if word.endswith(RECORDING_SUFFIX):
        return f"{word} is a recording: dltui replay {' '.join(argv)}"
    if any(mark in word for mark in ":/@.") or word == "local" or word.startswith("-"):
        return None
    close = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.75)
    if not close:
        return None
    return (f"unknown command '{word}' — did you mean {close[0]}? "
            f"(an agent on a host of that name: {word}:7070)")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--version"]:
        print(f"dltui {version()}")
        return exit_status.OK
    if argv and argv[0] in COMMANDS:
        module, argv = COMMANDS[argv[0]].module, argv[1:]
    else:
        module = TUI
        if (typo := mistyped(argv)) is not None:
            print(f"dltui: {typo}", file=sys.stderr)
            return exit_status.USAGE
    command = cast(Command, importlib.import_module(module))
    parser = command.parser()
    one_line_errors(parser)
    try:
        return command.run(parser, argv)
    except UsageError as exc:
        _named_parser(parser, argv).error(str(exc))
    except DltuiError as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return exit_status.of_error(exc)
    except KeyboardInterrupt:  # Ctrl-C before the command took signals itself (connecting)
        return exit_status.INTERRUPTED
    except BrokenPipeError:
        if not _stdout_closed():
            raise  # a socket's, not the reader of our output's: a fault to see whole
        return exit_status.OUTPUT_CLOSED


def _stdout_closed() -> bool:
    """Whether whatever read standard output (`| head`) has gone (a pipe with no reader polls
    as an error); if so, stdout now points at /dev/null, so that Python's last flush at exit
    finds no pipe to complain of. Said as quietly as a command that SIGPIPE ends."""
    poller = select.poll()
    poller.register(sys.stdout.fileno(), select.POLLOUT)
    if not any(mask & select.POLLERR for _, mask in poller.poll(0)):
        return False
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return True
