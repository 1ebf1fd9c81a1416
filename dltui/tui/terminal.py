"""A terminal that goes away ends dltui: a hang-up, or a terminal that reads as closed.

When an SSH connection drops or a tmux server is killed, the process may get SIGHUP, or only
find its terminal closed (the session leader kept the signal, as `make` does): Textual's
input thread then reads end-of-file in a loop. Either way the app exits, which closes the
session and with it the local agent; and if the app has not ended HANG_UP_GRACE_S later, the
process ends anyway: Textual's shutdown writes to the terminal, and with the terminal gone
that write can block for ever (its writer thread ended, its queue full; seen under load).
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import sys
import threading
import time

from textual.app import App

CHECK_S = 0.25
THREADS_GRACE_S = 0.5
"""After the app ends, how long its threads have to end too."""
HANG_UP_GRACE_S = 0.7
"""After the terminal goes away, how long the app has to end in order (closing the session,
a recording's last chunk) before the process ends without it."""
HANG_UP_STATUS = 128 + signal.SIGHUP
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
    deadline = threading.Timer(HANG_UP_GRACE_S, os._exit, (HANG_UP_STATUS,))
    deadline.daemon = True

    def hung_up() -> None:  # on the event loop, however often the hang-up is seen
        app.exit()
        if deadline.ident is None:
            deadline.start()

    asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, hung_up)
    poller = select.poll()
    poller.register(sys.__stdin__.fileno() if sys.__stdin__ else 0, select.POLLIN)

    def check() -> None:
        if any(events & CLOSED for _, events in poller.poll(0)):
            hung_up()

    app.set_interval(CHECK_S, check)


def run_to_the_end(app: App[None]) -> int:
    """Run the app; its exit status. The process ends with it: Textual stops its input thread
    only after writing to the terminal, and when the terminal went away that write can fail
    first, leaving the thread reading end-of-file at full speed and the interpreter waiting
    for it at exit (a dltui found spinning minutes after its tmux server was killed). A thread
    still running after THREADS_GRACE_S ends with the process."""
    app.run()
    status = app.return_code or 0
    deadline = time.monotonic() + THREADS_GRACE_S
    others = [
        t for t in threading.enumerate() if not t.daemon and t is not threading.current_thread()
    ]
    for thread in others:
        thread.join(max(0.0, deadline - time.monotonic()))
    if any(thread.is_alive() for thread in others):
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass  # the terminal is gone
        os._exit(status)
    return status
