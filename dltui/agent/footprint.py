"""The agent's resident memory: glibc's allocator kept to one arena, and NVML's start-up
garbage handed back; and its threads named for `top -H`, so its cost shows per thread.

glibc gives a thread that allocates an arena of its own, and what an arena has touched stays
resident. The agent's threads (sampler, slow reader, watchdog, XIDs, NVML's own) allocate
little and rarely at once, so one arena costs them nothing measurable and saves ~10 MB. NVML's
start frees ~10 MB that glibc would otherwise keep (H200 figures in
docs/results/telemetry-h200.md). Elsewhere than glibc both are nothing.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from pathlib import Path

M_ARENA_MAX = -8  # mallopt's parameter number, from glibc's malloc.h


def _glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None)
    return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None


def one_arena() -> None:
    """Before any thread starts: every thread allocates from the main arena."""
    if (libc := _glibc()) is not None:
        libc.mallopt(M_ARENA_MAX, 1)


def hand_back_freed() -> None:
    """Return the allocator's free pages to the system (after NVML has started)."""
    if (libc := _glibc()) is not None:
        libc.malloc_trim(0)


def name_threads() -> None:
    """Give each running thread its Python name in the kernel (top -H, /proc/PID/task/*/comm),
    without the common prefix (the kernel keeps 15 bytes); the main thread runs the event loop."""
    for thread in threading.enumerate():
        name = "event-loop" if thread is threading.main_thread() else thread.name
        try:
            Path(f"/proc/self/task/{thread.native_id}/comm").write_text(
                name.removeprefix("dltui-")[:15]
            )
        except OSError:
            pass  # not Linux, or the thread has ended
