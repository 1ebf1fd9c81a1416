"""cli.py: a list of commands, and the one place that says their errors, in one line with
where to read more; what it says when a word is wrong; --version."""

from __future__ import annotations

import importlib
import signal
import socket
import subprocess

import pytest

from dltui import cli, version
from dltui.cli import COMMANDS, TUI, main
from dltui.commands import exit_status
from tests.conftest import ROOT, dltui_command, free_port


@pytest.mark.parametrize("module", [*(entry.module for entry in COMMANDS.values()), TUI])
def test_every_command_has_a_parser_and_a_run(module):
    command = importlib.import_module(module)
    assert callable(command.run) and command.parser().prog.startswith("dltui")


def test_the_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    listed = capsys.readouterr().out.split("commands:\n", 1)[1]
    for name, entry in COMMANDS.items():
        assert f"dltui {name} {entry.usage}" in listed and entry.summary in listed


def test_a_usage_error_is_one_line_and_where_to_read_more(capsys, tmp_path):
    with pytest.raises(SystemExit) as exited:
        main(["record", "-o", str(tmp_path / "x.dlrec"), "--duration", "0"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "dltui record: --duration must be a positive number of seconds\n(see dltui record --help)\n"
    )


def test_a_plan_file_error_is_a_usage_error_before_anything_starts(capsys, tmp_path):
    plan = tmp_path / "bad.toml"
    plan.write_text("[kernels]\nset = 'enormous'\n")
    with pytest.raises(SystemExit) as exited:
        main(["record", "-o", str(tmp_path / "x.dlrec"), "--plan", str(plan)])
    assert exited.value.code == 2 and "unknown shape set 'enormous'" in capsys.readouterr().err
    assert not (tmp_path / "x.dlrec").exists()


def test_any_other_error_is_one_line_with_its_own_exit_status(capsys):
    address = f"127.0.0.1:{free_port()}"
    assert main(["probe", address]) == exit_status.UNREACHABLE
    out, err = capsys.readouterr()
    assert out == "" and err == (
        f"dltui probe: cannot reach {address}: connection refused (is the agent running?)\n"
    )


def test_a_near_miss_of_a_command_is_not_taken_for_a_host() -> None:
    said = cli.mistyped(["repaly", "x.dlrec"])
    assert said is not None and said.startswith("unknown command 'repaly' — did you mean replay?")
    assert "repaly:7070" in said  # how to mean a host of that name after all
    assert cli.mistyped(["x.dlrec"]) == "x.dlrec is a recording: dltui replay x.dlrec"
    for agent in (["gpu-01"], ["gpu-01:7070"], ["ssh://ops@gpu-01"], ["local"], ["10.0.0.7"], []):
        assert cli.mistyped(agent) is None, agent


def test_an_invalid_choice_names_the_word_and_the_nearest_choice() -> None:
    said = cli._suggest(
        "argument --set: invalid choice: 'quik' (choose from 'tiny', 'quick', 'full')"
    )
    assert said == "unknown 'quik' for --set — did you mean quick? (choose from tiny, quick, full)"
    assert cli._suggest("the following arguments are required: -o") == (
        "the following arguments are required: -o"
    )


def test_an_agent_given_to_bench_as_a_word_is_shown_as_an_option(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["bench", "kernels", "gpu-01:7070", "--set", "tiny", "ssh://ops@gpu-02"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[0] == (
        "dltui bench: unrecognized arguments: gpu-01:7070 ssh://ops@gpu-02 "
        "(agents are named with --agent: --agent gpu-01:7070 --agent ssh://ops@gpu-02)"
    )
    with pytest.raises(SystemExit):  # a mistyped option is not an agent
        main(["bench", "kernels", "--sett", "tiny"])
    assert "--agent" not in capsys.readouterr().err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"dltui {version()}\n"


def test_a_reader_that_goes_away_ends_the_command_quietly():
    """`dltui predict … | head`: no traceback, and the status a shell gives a command that
    SIGPIPE ends. The table is larger than a pipe holds, so the write meets the closed pipe."""
    layouts = ",".join(f"{servers}x8" for servers in range(1, 2000))
    command = dltui_command("predict", "--model", "resnet50", "--batch", "64", "--images-per-s",
                            "220", "--gpus-per-server", "8", "--intra-gbps", "370",
                            "--network-gbit", "100", "--layouts", layouts)  # fmt: skip
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          cwd=ROOT) as process:  # fmt: skip
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline().startswith(b"# predicted: resnet50")
        process.stdout.close()
        said = process.stderr.read()
        assert process.wait(timeout=60) == exit_status.OUTPUT_CLOSED == 141
    assert said == b""


def test_a_recording_named_as_a_folder_is_said_so_even_with_overwrite(capsys, tmp_path):
    for extra in ([], ["--overwrite"]):
        with pytest.raises(SystemExit) as exited:
            main(["record", "-o", str(tmp_path), "--duration", "1", *extra])
        assert exited.value.code == 2
        assert f"{tmp_path} is a folder: name the recording's file" in capsys.readouterr().err
    assert tmp_path.is_dir() and not any(tmp_path.iterdir())


def as_a_terminal_runs_it() -> None:
    """SIGINT at its default in the child, as a terminal's foreground job has it: a suite run
    as a background job (`make test &`) hands its children SIGINT ignored, which Python then
    keeps, and Ctrl-C could not reach the command at all."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_while_connecting_ends_the_command_without_a_traceback():
    """probe and bench took Ctrl-C as a 38-line traceback until their session was up."""
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never says hello
        port = silent.getsockname()[1]
        probe = subprocess.Popen(dltui_command("probe", f"127.0.0.1:{port}"), cwd=ROOT,
                                 stderr=subprocess.PIPE, text=True,
                                 preexec_fn=as_a_terminal_runs_it)  # fmt: skip
        connection, _ = silent.accept()
        with connection:
            probe.send_signal(signal.SIGINT)
            _, said = probe.communicate(timeout=30)
    assert probe.returncode == exit_status.INTERRUPTED and "Traceback" not in said, said
