"""Loaded into every Python process of a `suite_cost.py --by-process` run (this folder is put
on PYTHONPATH): each process appends one line as it starts and one with its CPU seconds as it
ends, saying what it was (its script or module, its subcommand) and which framework it loaded,
to the file that DLTUI_PROCESS_COST names. Rank processes end through os._exit, which skips
atexit, so that is wrapped too; a process killed by a signal leaves only its start."""

from __future__ import annotations

import atexit
import json
import os
import resource
import sys

LOG = os.environ.get("DLTUI_PROCESS_COST")


def _write(ended: bool) -> None:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    frameworks = [name for name in ("torch", "tensorflow") if name in sys.modules]
    line = {"pid": os.getpid(), "ended": ended, "argv": sys.orig_argv[1:8],
            "frameworks": frameworks, "cpu": usage.ru_utime + usage.ru_stime}  # fmt: skip
    try:
        with open(LOG or os.devnull, "a") as out:
            out.write(json.dumps(line) + "\n")
    except OSError:  # a test's own file-size limit, a full disk: this process's line is lost
        pass


if LOG:
    _write(ended=False)
    atexit.register(_write, True)
    _exit = os._exit

    def _exit_counted(status: int) -> None:
        _write(ended=True)
        _exit(status)

    os._exit = _exit_counted
