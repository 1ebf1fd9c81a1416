"""The process ends with the app, whatever thread is left running: on a terminal that went away
Textual's input thread can be left reading end-of-file for ever, and the interpreter would wait
for it at exit. And a hang-up ends the process even when the app's shutdown never ends (Textual
writing to the terminal that is gone)."""

from __future__ import annotations

import signal
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


NEVER_ENDS = """
import sys, time
from textual.app import App
from dltui.tui.terminal import run_to_the_end, watch_terminal

class NeverEnds(App[None]):
    def on_mount(self) -> None:
        watch_terminal(self)
        print("ready", file=sys.stderr, flush=True)

    def on_unmount(self) -> None:
        time.sleep(3600)  # as Textual's shutdown blocked, writing to a terminal that is gone

raise SystemExit(run_to_the_end(NeverEnds()))
"""


def test_a_hang_up_ends_the_process_even_when_the_app_cannot_end() -> None:
    app = subprocess.Popen(
        [sys.executable, "-c", NEVER_ENDS],
        cwd=ROOT,
        stdin=subprocess.PIPE,  # open: the terminal check sees no hang-up of its own
        stderr=subprocess.PIPE,
        env={"TEXTUAL_DRIVER": "textual.drivers.headless_driver:HeadlessDriver", "PATH": ""},
    )
    try:
        assert app.stderr is not None and app.stderr.readline() == b"ready\n"
        app.send_signal(signal.SIGHUP)
        began = time.monotonic()
        assert app.wait(timeout=30) == 128 + signal.SIGHUP
        assert time.monotonic() - began < 10  # the unmount would have held it for an hour
    finally:
        app.kill()
        app.wait()
