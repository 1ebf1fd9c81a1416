"""dltui in a real terminal, as a user over SSH would run it: tmux types, we read the screen."""

from __future__ import annotations

import os
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
    wait_for(lambda: host in screen() and "● live" in screen(), timeout=30, what="the live host")
    assert "cpu" in screen() and "q Quit" in screen()
    keys("?")
    wait_for(lambda: "dltui help" in screen(), timeout=10, what="the help screen")
    keys("Escape")
    wait_for(lambda: "dltui help" not in screen(), timeout=10, what="help to close")
    keys("q")
    wait_for(lambda: "● live" not in screen(), timeout=15, what="dltui to exit")
