"""The agent's allocator settings, in fresh interpreters: with one arena, threads that
allocate at once get no arena of their own (glibc's malloc_stats lists the arenas)."""

from __future__ import annotations

import subprocess
import sys

import pytest

ARENAS = """
import sys, threading
if sys.argv[1] == "one":
    from dltui.agent import footprint
    footprint.one_arena()
start = threading.Barrier(4)
def allocate():
    start.wait()
    kept = [bytearray(1 << 15) for _ in range(200)]  # malloc'd, below the mmap threshold
    start.wait()
threads = [threading.Thread(target=allocate) for _ in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
from dltui.agent import footprint
footprint.hand_back_freed()
import ctypes
ctypes.CDLL(None).malloc_stats()  # to stderr: "Arena 0:", "Arena 1:", ...
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_one_arena_keeps_threads_from_reserving_their_own() -> None:
    def arenas(mode: str) -> int:
        out = subprocess.run([sys.executable, "-c", ARENAS, mode], capture_output=True,
                             text=True, check=True)  # fmt: skip
        return out.stderr.count("Arena ")

    assert arenas("default") >= 2  # the control: glibc gives threads arenas of their own
    assert arenas("one") == 1


NAMES = """
import os, threading
from dltui.agent import footprint
stop = threading.Event()
threading.Thread(target=stop.wait, name="dltui-sample-fast").start()
footprint.name_threads()
tasks = os.listdir("/proc/self/task")
print(sorted(open(f"/proc/self/task/{t}/comm").read().strip() for t in tasks))
stop.set()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc's thread names")
def test_threads_carry_their_names_to_top() -> None:
    out = subprocess.run([sys.executable, "-c", NAMES], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['event-loop', 'sample-fast']"
