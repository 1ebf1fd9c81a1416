"""Watching NVML for calls that never return.

A C call cannot be interrupted, so a hung one is outlived instead: each sampling thread says
which GPU it is reading and which call it is in; a watchdog that finds a read older than that
thread's deadline marks the GPU hung and abandons the thread, and the sampler starts a new one
that skips the hung GPU. When the call finally returns, its thread clears the mark and ends
(`CallAbandoned`), and the GPU is read again.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)


class CallAbandoned(Exception):
    """Raised in a thread whose NVML call outlived its deadline, once the call returns: a
    replacement has taken over, and this thread should end."""


@dataclass
class Slot:
    """What one watched thread is doing in NVML."""

    deadline: float
    device: int | None = None
    call: str = ""
    since: float | None = None
    """When the current device read began (monotonic); None between reads."""
    abandoned: bool = False
    stuck_device: int | None = None


class CallWatch:
    def __init__(self) -> None:
        self._local = threading.local()
        self._slots: dict[int, Slot] = {}
        self.hung: dict[int, tuple[str, float]] = {}
        """GPU index -> (the call that has not returned, monotonic time its read began)."""

    def watch_this_thread(self, deadline: float) -> None:
        """Watch the calling thread's NVML reads: each must end within `deadline` seconds."""
        slot = self._local.slot = Slot(deadline)
        self._slots[threading.get_ident()] = slot

    def begin(self, device: int) -> Slot | None:
        """A read of `device` begins; the calling thread's slot, where it is watched."""
        slot: Slot | None = getattr(self._local, "slot", None)
        if slot is not None:
            slot.device, slot.since = device, time.monotonic()
        return slot

    def end(self) -> None:
        slot = getattr(self._local, "slot", None)
        if slot is not None:
            slot.since = None

    def calling(self, name: str) -> Slot | None:
        slot = getattr(self._local, "slot", None)
        if slot is not None:
            slot.call = name
        return slot

    def returned(self, slot: Slot | None) -> None:
        """After a call (or a GPU's reads): end this thread if it was given up on inside one."""
        if slot is None or not slot.abandoned:
            return
        if slot.stuck_device is not None:
            self.hung.pop(slot.stuck_device, None)
            log.warning("GPU %d: NVML %s returned at last", slot.stuck_device, slot.call)
        self._slots.pop(threading.get_ident(), None)
        self._local.slot = None
        raise CallAbandoned(slot.call)

    def last_call(self, thread: threading.Thread) -> str | None:
        """The NVML call a watched thread is in, or made last."""
        slot = self._slots.get(thread.ident or 0)
        return slot.call if slot is not None and slot.call else None

    def next_deadline(self) -> float | None:
        """When the earliest read in progress passes its deadline (monotonic); None when no
        read is in progress, as is nearly always so (reads take microseconds)."""
        deadlines = [slot.since + slot.deadline for slot in list(self._slots.values())
                     if slot.since is not None and not slot.abandoned]  # fmt: skip
        return min(deadlines, default=None)

    def abandon_stuck(self) -> list[int]:
        """The threads (by ident) stuck past their deadline, now abandoned; their GPUs hung."""
        now = time.monotonic()
        stuck = []
        for ident, slot in list(self._slots.items()):
            since = slot.since
            if slot.abandoned or since is None or now - since <= slot.deadline:
                continue
            slot.abandoned, slot.stuck_device = True, slot.device
            if slot.device is not None:
                self.hung[slot.device] = (slot.call, since)
            log.warning("GPU %s: NVML %s has not returned for %.1f s", slot.device, slot.call,
                        now - since)  # fmt: skip
            stuck.append(ident)
        return stuck

    def reason(self, device: int) -> str | None:
        """Why this GPU is not being read, in words; None when it is not hung."""
        hung = self.hung.get(device)
        if hung is None:
            return None
        call, since = hung
        return f"NVML {call} has not returned for {time.monotonic() - since:.0f} s"
