"""A terminal that goes away ends dltui: a hang-up, or a terminal that reads as closed.

When an SSH connection drops or a tmux server is killed, the process may get SIGHUP, or only
find its terminal closed (the session leader kept the signal, as `make` does): Textual's
input thread then reads end-of-file in a loop. Either way the app exits, which closes the
session and with it the local agent.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import sys

from textual.app import App

CHECK_S = 0.25
CLOSED = select.POLLHUP | select.POLLERR | select.POLLNVAL


def needs_terminal() -> str | None:
    """Why the TUI cannot run here (no terminal on stdin or stdout), or None. Textual's web
    driver (`dltui serve`) brings its own."""
    if os.environ.get("TEXTUAL_DRIVER"):
        return None
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return (
            "the TUI needs a terminal (stdin and stdout); for a headless run use "
            "'dltui record', for a browser 'dltui serve'"
        )
    return None


def watch_terminal(app: App[None]) -> None:
    """Exit the app on SIGHUP, and when stdin reports the terminal closed (polled, cheaply,
    a few times a second). For an app on a real terminal, from its on_mount."""
    asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, app.exit)
    poller = select.poll()
    poller.register(sys.__stdin__.fileno() if sys.__stdin__ else 0, select.POLLIN)

    def check() -> None:
        if any(events & CLOSED for _, events in poller.poll(0)):
            app.exit()

    app.set_interval(CHECK_S, check)
