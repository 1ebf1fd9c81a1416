"""A flag one thread sets to end another's timed wait: `threading.Event`, for less CPU a wait.

The sampling threads sleep between ticks and must wake at once when the rate changes or the
sampler stops. `Event.wait(timeout)` builds a lock for each wait and waits on it through a
condition, which costs a VM half as much again as a plain sleep or a `poll` (measured:
docs/results/telemetry-h200.md). A pipe that `poll` watches costs about what a sleep does: a
set flag is a byte in the pipe.
"""

from __future__ import annotations

import os
import select
import threading


class Wakeup:
    _closed = True
    """Until the pipe exists: a Wakeup whose pipe could not be made closes nothing."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        """A set and a close never cross: a closed descriptor's number may be reused."""
        self._read, self._write = os.pipe()
        self._closed = False
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self._poll = select.poll()
        self._poll.register(self._read, select.POLLIN)

    def set(self) -> None:
        """Wake the waiter now, or make its next wait return at once; nothing once closed.
        Any thread."""
        with self._lock:
            if self._closed:
                return
            try:
                os.write(self._write, b"\0")
            except BlockingIOError:
                pass  # the pipe is full: it is set already

    def wait(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds; True when set (it stays set until `clear`)."""
        return bool(self._poll.poll(max(0.0, timeout) * 1000))

    def clear(self) -> None:
        try:
            while os.read(self._read, 512):
                pass
        except BlockingIOError:
            pass  # emptied

    def close(self) -> None:
        """Once no thread waits any more (or when it is collected)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                os.close(self._read)
                os.close(self._write)

    __del__ = close
