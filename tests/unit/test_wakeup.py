from __future__ import annotations

import os
import threading
import time

import pytest

from dltui.telemetry.wakeup import Wakeup


def test_a_wait_ends_at_its_timeout_unless_set() -> None:
    wakeup = Wakeup()
    began = time.monotonic()
    assert wakeup.wait(0.05) is False
    assert time.monotonic() - began >= 0.05
    wakeup.set()
    wakeup.set()  # twice is once
    assert wakeup.wait(10) is True
    assert wakeup.wait(0) is True  # set until cleared
    wakeup.clear()
    assert wakeup.wait(0) is False
    wakeup.close()


def test_a_set_from_another_thread_ends_the_wait_at_once() -> None:
    wakeup = Wakeup()
    setter = threading.Timer(0.05, wakeup.set)
    setter.start()
    began = time.monotonic()
    assert wakeup.wait(10) is True
    assert time.monotonic() - began < 5
    setter.join()
    wakeup.close()


def test_a_set_after_close_writes_nowhere() -> None:
    """A rate change racing the sampler's stop: the closed pipe's numbers, taken again by a
    new pipe, get nothing."""
    wakeup = Wakeup()
    wakeup.close()
    read, write = os.pipe()
    os.set_blocking(read, False)
    wakeup.set()
    wakeup.close()
    with pytest.raises(BlockingIOError):
        os.read(read, 1)
    os.close(read)
    os.close(write)
