"""How every command exits: one table, one code for one meaning.

Errors say what went wrong; this table alone says which number a shell sees for it, so a
cron job or a CI step can tell "the agent is down" from "the server failed its acceptance
test" without reading a line.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from dltui.errors import DltuiError

if TYPE_CHECKING:  # the CLI loads this table for every command: the messages only when used
    from dltui.protocol.messages import JobState

OK = 0
FAILED = 1
"""A job failed, or an error with no code of its own."""
USAGE = 2
"""argparse's: the command line, or a file it names, asks for what cannot be done so."""
REFUSED = 3
"""An agent refused us (secret, certificate, ssh key) or refused the job."""
BUSY = 4
"""An agent had no room for us until the wait's limit."""
ASSERTION_FAILED = 5
"""A result did not pass an `--assert` or a plan file's [assert] check."""
UNREACHABLE = 6
"""An agent did not answer, or went away in the middle of a job."""
EVENT = 7
"""`--fail-on`: a health event or alert that severe arrived."""
WRITE_FAILED = 74
"""sysexits' EX_IOERR: the file system refused a write (full, read-only, over a size limit)."""
INTERRUPTED = 130
"""As a shell reports a command stopped by Ctrl-C (or SIGTERM), its jobs cancelled."""
OUTPUT_CLOSED = 141
"""As a shell reports a command that SIGPIPE ended: what read its output (`| head`) went away."""

TABLE = {
    OK: "success",
    FAILED: "a job failed, or another error",
    USAGE: "bad command line, or a file it names is unusable",
    REFUSED: "an agent refused the connection or the job",
    BUSY: "an agent stayed busy",
    ASSERTION_FAILED: "an assertion failed",
    UNREACHABLE: "an agent did not answer or went away",
    EVENT: "a --fail-on event arrived",
    WRITE_FAILED: "a write failed (disk full, read-only)",
    INTERRUPTED: "interrupted (Ctrl-C, SIGTERM): jobs cancelled",
    OUTPUT_CLOSED: "what read the output went away (| head)",
}

JOB_EXIT: dict[JobState, int] = {
    "done": OK,
    "failed": FAILED,
    "refused": REFUSED,
    "cancelled": INTERRUPTED,
}
"""A command that ran benchmarks exits as its worst job ended."""


def of_error(error: DltuiError) -> int:
    """The code for an error dltui raised on purpose: its kind's, by name."""
    return {
        "usage": USAGE,
        "refused": REFUSED,
        "busy": BUSY,
        "unreachable": UNREACHABLE,
        "assertion": ASSERTION_FAILED,
        "event": EVENT,
        "write": WRITE_FAILED,
    }.get(error.kind, FAILED)


def epilog(*codes: int, before: str = "") -> str:
    """The exit statuses a command can end with, for its --help, after the paragraphs of
    `before`; its parser formats with `Paragraphs`."""
    statuses = "exit status: " + "; ".join(f"{code} {TABLE[code]}" for code in sorted(codes))
    return f"{before}\n\n{statuses}" if before else statuses


class Paragraphs(argparse.HelpFormatter):
    """argparse's formatter, each paragraph (blank-line separated) filled on its own rather
    than all run together; one with an indented line (a list) is kept as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        fill = super()._fill_text  # not inside the generator: super() needs this frame
        return "\n\n".join(
            paragraph if "\n  " in paragraph else fill(paragraph, width, indent)
            for paragraph in text.split("\n\n")
        )
