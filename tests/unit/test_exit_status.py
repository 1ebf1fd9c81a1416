"""commands/exit_status.py: one table, one code for one meaning, said by `--help`."""

from __future__ import annotations

import pytest

from dltui import cli
from dltui.client.session import Unreachable
from dltui.client.target import Target
from dltui.commands import COMMANDS, exit_status
from dltui.commands.record import AssertionsFailed, EventArrived, RecordingStopped
from dltui.commands.tui import NoTerminal
from dltui.errors import DltuiError, UsageError
from dltui.plans.check import PlanError

TARGET = Target("tcp", "gpu-01", 7070)


def test_every_code_means_one_thing() -> None:
    codes = [exit_status.OK, exit_status.FAILED, exit_status.USAGE, exit_status.REFUSED,
             exit_status.BUSY, exit_status.ASSERTION_FAILED, exit_status.UNREACHABLE,
             exit_status.EVENT, exit_status.WRITE_FAILED, exit_status.INTERRUPTED,
             exit_status.OUTPUT_CLOSED]  # fmt: skip
    assert len(set(codes)) == len(codes) and set(codes) == set(exit_status.TABLE)
    assert exit_status.INTERRUPTED == 130 and exit_status.USAGE == 2  # a shell's and argparse's


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (UsageError("bad"), exit_status.USAGE),
        (PlanError("bad plan"), exit_status.USAGE),
        (NoTerminal("the TUI needs a terminal"), exit_status.USAGE),
        (Unreachable(TARGET, "connection refused", refused=False), exit_status.UNREACHABLE),
        (Unreachable(TARGET, "wrong secret", refused=True), exit_status.REFUSED),
        (Unreachable(TARGET, "no room", refused=False, busy=True), exit_status.BUSY),
        (AssertionsFailed("1 assertion failure of 1 assertion"), exit_status.ASSERTION_FAILED),
        (EventArrived("critical event"), exit_status.EVENT),
        (RecordingStopped("disk full"), exit_status.WRITE_FAILED),
        (DltuiError("anything else"), exit_status.FAILED),
    ],
)
def test_each_error_has_its_own_code(error: DltuiError, code: int) -> None:
    assert exit_status.of_error(error) == code


def test_a_job_exits_as_it_ended() -> None:
    assert exit_status.JOB_EXIT == {"done": 0, "failed": 1, "refused": 3, "cancelled": 130}


@pytest.mark.parametrize(
    "argv", [[], *([name] for name in COMMANDS), ["bench", "kernels"], ["bench", "models"]]
)
def test_every_commands_help_ends_with_its_exit_statuses(argv: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main([*argv, "--help"])
    assert exited.value.code == 0
    said = " ".join(capsys.readouterr().out.split())  # argparse wraps the epilog
    statuses = said.split("exit status: ")[-1]
    assert statuses.startswith("0 success; 1 a job failed, or another error; 2 bad command line")
    writes = argv[:1] in (["record"], ["bench"], ["export"], ["report"], ["predict"])
    assert ("74 a write failed" in statuses) == writes


@pytest.mark.parametrize("command", ["record", "bench", "probe"])
def test_help_lists_the_codes_a_command_can_end_with(command: str, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main([command, "--help"])
    assert exited.value.code == 0
    said = " ".join(capsys.readouterr().out.split())  # argparse wraps the epilog
    assert "exit status: 0 success;" in said and "6 an agent did not answer or went away" in said
    assert ("7 a --fail-on event arrived" in said) == (command == "record")
    assert ("5 an assertion failed" in said) == (command != "probe")
