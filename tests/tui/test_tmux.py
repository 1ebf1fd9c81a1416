"""dltui in a real terminal, as a user over SSH would run it: tmux types, we read the screen."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.fixture
def terminal():
    name = f"dltui-test-{uuid.uuid4().hex[:8]}"
    env = os.environ | {"TERM": "xterm-256color"}

    # A tmux server of its own: one shared with the test before may still be exiting when this
    # session is created, and would take it down with it.
    server = Path(tempfile.gettempdir()) / f"{name}.sock"

    def tmux(*args: str, check: bool = False) -> str:
        done = subprocess.run(
            ["tmux", "-S", str(server), *args], capture_output=True, text=True, env=env
        )
        if check and done.returncode:
            raise AssertionError(f"tmux {args[0]} failed: {done.stderr.strip()}")
        return done.stdout

    command = f"cd {ROOT} && {sys.executable} -m dltui"
    tmux("new-session", "-d", "-s", name, "-x", "100", "-y", "30", command, check=True)

    def until(seen: Callable[[str], object], timeout: float, what: str) -> object:
        """Read the pane until `seen(text)` holds; a timeout shows the screen that was there."""
        deadline = time.monotonic() + timeout
        while True:
            text = tmux("capture-pane", "-p", "-t", name)
            if found := seen(text):
                return found
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {timeout} s waiting for {what}; the screen:\n{text}"
                )
            time.sleep(0.1)  # ok: a person's pace; each poll is a tmux process on 2 cores

    def keys(*typed: str) -> None:
        tmux("send-keys", "-t", name, *typed)

    yield until, keys
    tmux("kill-server")
    server.unlink(missing_ok=True)


def test_a_user_sees_this_machine_asks_for_help_and_quits(terminal):
    until, keys = terminal
    host = socket.gethostname()[:20]
    screen = until(lambda text: host in text and "● live" in text and "cpu" in text and text,
                   timeout=60, what="the live host")  # fmt: skip
    assert "q Quit" in screen
    keys("?")
    until(lambda text: "dltui help" in text, timeout=10, what="the help screen")
    keys("Escape")
    until(lambda text: "dltui help" not in text, timeout=10, what="help to close")
    keys("q")
    until(lambda text: "● live" not in text, timeout=15, what="dltui to exit")


def test_a_user_starts_a_benchmark_from_the_launcher_and_reads_its_result(terminal):
    pytest.importorskip("torch")
    until, keys = terminal
    until(lambda text: "● live" in text and "b Benchmark" in text, timeout=60,
          what="the live host and the key that runs a benchmark")  # fmt: skip
    keys("b")
    until(lambda text: "Run a benchmark" in text and "Smoke test" in text, timeout=10,
          what="the launcher")  # fmt: skip
    keys("s")  # the first plan, on the server chosen already
    until(lambda text: "Smoke test · done" in text, timeout=120, what="the run to finish")
    keys("v")
    until(lambda text: re.search(r"gemm 64x64x64 NN fwd fp32 +[\d.]+ [GT]FLOP/s", text),
          timeout=10, what="the result in the results view")  # fmt: skip
    keys("Escape")
    until(lambda text: "Run a benchmark" not in text and "● live" in text, timeout=10,
          what="the server view again")  # fmt: skip
    keys("q")
    until(lambda text: "● live" not in text, timeout=15, what="dltui to exit")
