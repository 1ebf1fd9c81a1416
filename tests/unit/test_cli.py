"""cli.py: a list of commands, and the one place that says their errors."""

from __future__ import annotations

import importlib
import socket

import pytest

from dltui.cli import COMMANDS, TUI, main


@pytest.mark.parametrize("module", [*COMMANDS.values(), TUI])
def test_every_command_has_a_parser_and_a_run(module):
    command = importlib.import_module(module)
    assert callable(command.run) and command.parser().prog.startswith("dltui")


def test_a_usage_error_shows_the_commands_usage(capsys, tmp_path):
    with pytest.raises(SystemExit) as exited:
        main(["record", "-o", str(tmp_path / "x.dlrec"), "--duration", "0"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: dltui record")
    assert err.endswith("dltui record: error: --duration must be a positive number of seconds\n")


def test_a_plan_file_error_is_a_usage_error_before_anything_starts(capsys, tmp_path):
    plan = tmp_path / "bad.toml"
    plan.write_text("[kernels]\nset = 'enormous'\n")
    with pytest.raises(SystemExit) as exited:
        main(["record", "-o", str(tmp_path / "x.dlrec"), "--plan", str(plan)])
    assert exited.value.code == 2 and "unknown shape set 'enormous'" in capsys.readouterr().err
    assert not (tmp_path / "x.dlrec").exists()


def test_any_other_error_is_one_line_with_its_own_exit_status(capsys):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    assert main(["probe", address]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (
        f"dltui probe: cannot reach {address}: connection refused (is the agent running?)\n"
    )
