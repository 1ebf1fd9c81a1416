"""dltui in a real terminal, as a user over SSH would run it: tmux types, we read the screen.

Each test has a tmux server of its own (its own socket): one shared with the test before may
still be exiting when a session is created, and would take it down with it.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from tests.conftest import ROOT, require, wait_for

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
DLTUI = f"{shlex.quote(sys.executable)} -m dltui"


@dataclass
class Terminal:
    """One tmux server and its session, running a command in a shell of its own."""

    name: str
    server: Path
    env: dict[str, str]

    def tmux(self, *args: str, check: bool = False) -> str:
        done = subprocess.run(
            ["tmux", "-S", str(self.server), *args], capture_output=True, text=True, env=self.env
        )
        if check and done.returncode:
            raise AssertionError(f"tmux {args[0]} failed: {done.stderr.strip()}")
        return done.stdout

    def start(self, command: str, width: int = 100, height: int = 30) -> None:
        self.tmux("new-session", "-d", "-s", self.name, "-x", str(width), "-y", str(height),
                  f"cd {ROOT} && {command}", check=True)  # fmt: skip

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def until(self, seen: Callable[[str], object], timeout: float, what: str) -> object:
        """Read the pane until `seen(text)` holds; a timeout shows the screen that was there."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if found := seen(text):
                return found
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {timeout} s waiting for {what}; the screen:\n{text}"
                )
            time.sleep(0.1)  # ok: a person's pace; each poll is a tmux process on 2 cores

    def keys(self, *typed: str) -> None:
        self.tmux("send-keys", "-t", self.name, *typed)

    def shell_pid(self) -> int:
        return int(self.tmux("list-panes", "-t", self.name, "-F", "#{pane_pid}").strip())


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    name = f"dltui-test-{uuid.uuid4().hex[:8]}"
    env = os.environ | {"TERM": "xterm-256color"}
    term = Terminal(name, Path(tempfile.gettempdir()) / f"{name}.sock", env)
    yield term
    term.tmux("kill-server")
    term.server.unlink(missing_ok=True)


def test_a_user_sees_this_machine_asks_for_help_and_quits(terminal: Terminal) -> None:
    terminal.start(DLTUI)
    host = socket.gethostname()[:20]
    screen = terminal.until(lambda text: host in text and "● live" in text and "cpu" in text
                            and text, timeout=60, what="the live host")  # fmt: skip
    assert "q Quit" in str(screen)
    terminal.keys("?")
    terminal.until(lambda text: "dltui help" in text, timeout=10, what="the help screen")
    terminal.keys("Escape")
    terminal.until(lambda text: "dltui help" not in text, timeout=10, what="help to close")
    terminal.keys("q")
    terminal.until(lambda text: "● live" not in text, timeout=15, what="dltui to exit")


def test_a_user_starts_a_benchmark_from_the_launcher_and_reads_its_result(
    terminal: Terminal,
) -> None:
    require("torch")
    terminal.start(DLTUI)
    terminal.until(lambda text: "● live" in text and "b Benchmark" in text, timeout=60,
                   what="the live host and the key that runs a benchmark")  # fmt: skip
    terminal.keys("b")
    terminal.until(lambda text: "Run a benchmark" in text and "Smoke test" in text, timeout=10,
                   what="the launcher")  # fmt: skip
    terminal.keys("s")  # the first plan, on the server chosen already
    terminal.until(lambda text: "Smoke test · done" in text, timeout=120, what="the run to end")
    terminal.keys("v")
    terminal.until(lambda text: re.search(r"gemm 64x64x64 NN fwd fp32 +[\d.]+ [GT]FLOP/s", text),
                   timeout=10, what="the result in the results view")  # fmt: skip
    terminal.keys("Escape")
    terminal.until(lambda text: "Run a benchmark" not in text and "● live" in text, timeout=10,
                   what="the server view again")  # fmt: skip
    terminal.keys("q")
    terminal.until(lambda text: "● live" not in text, timeout=15, what="dltui to exit")


def test_without_a_terminal_dltui_says_so_in_one_line(terminal: Terminal) -> None:
    terminal.start(f"{DLTUI} </dev/null >/dev/null; echo rc=$?; sleep 60")
    text = str(terminal.until(lambda text: "rc=" in text and text, timeout=30, what="the exit"))
    assert "rc=2" in text
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines[0].startswith("dltui: the TUI needs a terminal (stdin and stdout)")
    assert len(lines) <= 3  # the line (wrapped at 100 columns) and rc: no escape codes


def test_a_mistyped_command_is_an_error_with_a_suggestion(terminal: Terminal) -> None:
    terminal.start(f"{DLTUI} repaly x.dlrec; echo rc=$?; {DLTUI} bench kernel; echo rc=$?; "
                   "sleep 60")  # fmt: skip
    text = str(terminal.until(lambda t: t.count("rc=") == 2 and t, timeout=30, what="both"))
    assert "dltui: unknown command 'repaly' — did you mean replay?" in text
    assert "dltui bench: unknown 'kernel' — did you mean kernels?" in text
    assert re.findall(r"rc=(\d+)", text) == ["2", "2"]
    assert "usage:" not in text


def test_ctrl_c_in_bench_cancels_says_so_and_exits_130(terminal: Terminal) -> None:
    require("torch")
    # The full set on this CPU takes an hour: it is running when Ctrl-C comes.
    terminal.start(f"{DLTUI} bench kernels --set full --device cpu --kind gemm; echo rc=$?; "
                   "sleep 60")  # fmt: skip
    text = str(terminal.until(lambda t: "gemm " in t and "/160" in t and t, timeout=90,
                              what="the run under way"))  # fmt: skip
    assert re.search(r"set full: 160 cases, about \d", text)  # its size, up front
    terminal.keys("C-c")
    text = str(terminal.until(lambda t: "rc=" in t and t, timeout=60, what="the exit"))
    assert "rc=130" in text and "# cancelled" in text
    assert "lost the connection" not in text and "exited with code" not in text


def test_ctrl_c_quits_the_tui_with_130(terminal: Terminal) -> None:
    terminal.start(f"{DLTUI}; echo rc=$?; sleep 60", width=80, height=24)
    terminal.until(lambda text: "● live" in text, timeout=60, what="the live host")
    terminal.keys("C-c")
    text = str(terminal.until(lambda t: "rc=" in t and t, timeout=15, what="the exit"))
    assert "rc=130" in text
    assert "to quit" not in text  # no "press ctrl+q" prompt on the way out


def _dltui_under(shell: int) -> psutil.Process:
    """The dltui TUI process a pane's shell started (not its local agent)."""
    for child in psutil.Process(shell).children(recursive=True):
        command = child.cmdline()
        if command[1:3] == ["-m", "dltui"] and "agent" not in command:
            return child
    raise AssertionError("no dltui under the pane's shell")


def _exited(process: psutil.Process) -> bool:
    """Ended: gone, or a zombie its new parent (the shell died too) has yet to reap."""
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.parametrize("how", ["kill the tmux server", "SIGHUP"])
def test_a_terminal_that_goes_away_ends_dltui_and_its_agent(terminal: Terminal, how: str) -> None:
    # A shell as the session leader, as make is under `make demo`: it keeps the hang-up.
    terminal.start(f"sh -c '{DLTUI}; sleep 60'")
    terminal.until(lambda text: "● live" in text, timeout=60, what="the live host")
    app = _dltui_under(terminal.shell_pid())
    agents = [child for child in app.children(recursive=True) if "agent" in child.cmdline()]
    assert agents, "the TUI starts a local agent"
    if how == "SIGHUP":
        app.send_signal(signal.SIGHUP)
    else:
        terminal.tmux("kill-server")
    began = time.monotonic()  # the hang-up has happened: tmux has closed the terminal
    wait_for(lambda: _exited(app), 5, f"dltui to exit after '{how}'")
    print(f"dltui exited {time.monotonic() - began:.2f} s after '{how}'")
    assert time.monotonic() - began < 1.5  # a second, and slack for a loaded machine
    wait_for(lambda: all(_exited(agent) for agent in agents), 5, "the agent to stop")
