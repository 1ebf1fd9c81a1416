"""The process ends with the app, whatever thread is left running: on a terminal that went away
Textual's input thread can be left reading end-of-file for ever, and the interpreter would wait
for it at exit."""

from __future__ import annotations

import subprocess
import sys
import time

from tests.conftest import ROOT

STUCK = """
import threading, time
from textual.app import App
from dltui.tui.terminal import run_to_the_end

class Stuck(App[None]):
    def on_mount(self) -> None:
        # As the input thread spins when its terminal is gone: not a daemon, never done.
        threading.Thread(target=lambda: time.sleep(3600), name="textual-input").start()
        self.exit(return_code=7)

raise SystemExit(run_to_the_end(Stuck()))
"""


def test_a_thread_left_running_does_not_keep_the_process() -> None:
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", STUCK],
        cwd=ROOT,
        capture_output=True,
        timeout=60,
        env={"TEXTUAL_DRIVER": "textual.drivers.headless_driver:HeadlessDriver", "PATH": ""},
    )
    assert done.returncode == 7, done.stderr.decode()
    assert time.monotonic() - began < 30  # the thread would have held it for an hour
