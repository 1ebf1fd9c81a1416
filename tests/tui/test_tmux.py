"""dltui in a real terminal, as a user over SSH would run it: tmux types, we read the screen."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import uuid

import pytest

from tests.conftest import ROOT, wait_for

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.fixture
def terminal():
    name = f"dltui-test-{uuid.uuid4().hex[:8]}"
    env = os.environ | {"TERM": "xterm-256color"}

    def tmux(*args: str) -> str:
        done = subprocess.run(["tmux", *args], capture_output=True, text=True, env=env)
        return done.stdout

    command = f"cd {ROOT} && {sys.executable} -m dltui"
    tmux("new-session", "-d", "-s", name, "-x", "100", "-y", "30", command)

    def screen() -> str:
        return tmux("capture-pane", "-p", "-t", name)

    def keys(*typed: str) -> None:
        tmux("send-keys", "-t", name, *typed)

    yield screen, keys
    tmux("kill-session", "-t", name)


def test_a_user_sees_this_machine_asks_for_help_and_quits(terminal):
    screen, keys = terminal
    host = socket.gethostname()[:20]
    wait_for(lambda: host in screen() and "● live" in screen() and "cpu" in screen(),
             timeout=30, what="the live host")  # fmt: skip
    assert "q Quit" in screen()
    keys("?")
    wait_for(lambda: "dltui help" in screen(), timeout=10, what="the help screen")
    keys("Escape")
    wait_for(lambda: "dltui help" not in screen(), timeout=10, what="help to close")
    keys("q")
    wait_for(lambda: "● live" not in screen(), timeout=15, what="dltui to exit")


def test_a_user_starts_a_benchmark_from_the_launcher_and_reads_its_result(terminal):
    pytest.importorskip("torch")
    screen, keys = terminal
    wait_for(lambda: "● live" in screen() and "b Benchmark" in screen(), timeout=30,
             what="the live host and the key that runs a benchmark")  # fmt: skip
    keys("b")
    wait_for(lambda: "Run a benchmark" in screen() and "Smoke test" in screen(), timeout=10,
             what="the launcher")  # fmt: skip
    keys("s")  # the first plan, on the server chosen already
    wait_for(lambda: "Smoke test · done" in screen(), timeout=120, what="the run to finish")
    keys("v")
    wait_for(lambda: re.search(r"gemm 64x64x64 NN fwd fp32 +[\d.]+ [GT]FLOP/s", screen()),
             timeout=10, what="the result in the results view")  # fmt: skip
    keys("Escape")
    wait_for(lambda: "Run a benchmark" not in screen() and "● live" in screen(), timeout=10,
             what="the server view again")  # fmt: skip
    keys("q")
    wait_for(lambda: "● live" not in screen(), timeout=15, what="dltui to exit")
