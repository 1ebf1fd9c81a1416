"""The agent's resident memory: glibc's allocator kept to one arena, and NVML's start-up
garbage handed back; its threads kept to one CPU; and named for `top -H`, so its cost shows per
thread.

glibc gives a thread that allocates an arena of its own, and what an arena has touched stays
resident. The agent's threads (sampler, slow reader, watchdog, XIDs, NVML's own) allocate
little and rarely at once, so one arena costs them nothing measurable and saves memory; NVML's
start frees memory that glibc would otherwise keep (how much: docs/results/telemetry-h200.md,
"RSS"). Elsewhere than glibc both are nothing.

The agent's threads wake each other: each tick that ends a batch wakes the event loop, and the
fast tick wakes the slow reader. On one CPU such a wake is a switch on a CPU that is awake;
across CPUs it interrupts a sleeping one, which costs a VM more (the same page). So its threads
keep to one CPU, the last it may run on unless it is told which (`--cpu`); the benchmark
workers it starts run on all the CPUs it could (CPUS_ENV).
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
import threading
from pathlib import Path

from dltui.plans.names import CPUS_ENV

log = logging.getLogger(__name__)

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


def one_cpu(cpu: int | None = None) -> int | None:
    """Before any thread starts (each inherits it): keep the agent to `cpu`, or to the last CPU
    it may run on; which one, or None where a process cannot choose (not Linux). ValueError
    when `cpu` is not one it may run on."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = os.sched_getaffinity(0)
    if cpu is None:
        cpu = max(allowed)
    elif cpu not in allowed:
        raise ValueError(f"CPU {cpu} is not one this process may run on: {_cpu_list(allowed)}")
    try:
        os.sched_setaffinity(0, {cpu})
    except OSError as exc:  # a cpuset that changed under it: the agent runs anywhere then
        log.warning("cannot keep to CPU %d: %s", cpu, exc)
        return None
    os.environ[CPUS_ENV] = ",".join(map(str, sorted(allowed)))
    return cpu


def _cpu_list(cpus: set[int]) -> str:
    """CPUs in words, e.g. "CPUs 0-3, 8"."""
    runs: list[list[int]] = []
    for cpu in sorted(cpus):
        if runs and cpu == runs[-1][-1] + 1:
            runs[-1].append(cpu)
        else:
            runs.append([cpu])
    words = [f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]) for run in runs]
    return ("CPU " if len(cpus) == 1 else "CPUs ") + ", ".join(words)


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
