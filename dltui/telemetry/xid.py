"""XID errors as events, on a thread of their own.

The driver reports an XID when something goes wrong on a GPU (a fault, an ECC error, the GPU
falling off the bus). NVML hands them out through an event set: this thread registers every
GPU for critical-XID events and waits on the set a second at a time, so it notices the sampler
stopping between waits. It is not watched for hangs like the sampling threads (a wait blocks by
design); a GPU that cannot register (NotSupported, no permission) is left out and said once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from dltui.protocol.messages import Event, Severity
from dltui.telemetry.nvml import NvmlGateway, Unanswered

log = logging.getLogger(__name__)

XID_EVENT = 0x8  # nvmlEventTypeXidCriticalError
WAIT_MS = 1000
"""How long one wait lasts: the longest the thread takes to notice it should stop."""

# What the common XIDs mean (NVIDIA's XID catalogue), and how bad each is for a benchmark.
XIDS: dict[int, tuple[str, Severity]] = {
    13: ("graphics engine exception (usually the application's fault)", "warning"),
    31: ("GPU memory page fault (usually the application's fault)", "warning"),
    43: ("GPU stopped processing (usually the application's fault)", "warning"),
    45: ("preemptive cleanup after an earlier error", "info"),
    48: ("double-bit ECC error", "critical"),
    61: ("internal micro-controller breakpoint or warning", "warning"),
    62: ("internal micro-controller halt", "critical"),
    63: ("ECC page retirement or row remapping recorded", "warning"),
    64: ("ECC page retirement or row remapping failed", "critical"),
    74: ("NVLink error", "critical"),
    79: ("GPU has fallen off the bus", "critical"),
    92: ("high single-bit ECC error rate", "warning"),
    94: ("contained ECC error", "warning"),
    95: ("uncontained ECC error", "critical"),
    119: ("GSP RPC timeout", "critical"),
    120: ("GSP error", "critical"),
    154: ("GPU recovery action changed", "critical"),
}


def xid_event(gpu: int | None, code: int, wall: float) -> Event:
    """An XID as an event (the agent numbers it)."""
    meaning, severity = XIDS.get(code, ("see NVIDIA's XID catalogue", "warning"))
    return Event(
        0, "xid", severity, f"XID {code}: {meaning}", wall, gpu=gpu, state="once", value=code
    )


def watch_xid(
    gateway: NvmlGateway, on_event: Callable[[Event], None], stopping: threading.Event
) -> None:
    """Hand each XID to `on_event` until `stopping` is set; returns at once without GPUs that
    can be registered."""
    try:
        event_set = gateway.call_or_unanswered("nvmlEventSetCreate")
    except Unanswered as exc:
        log.info("no XID events: NVML cannot create an event set: %s", exc)
        return
    try:
        if _register(gateway, event_set):
            _wait(gateway, event_set, on_event, stopping)
    finally:
        try:
            gateway.call_or_unanswered("nvmlEventSetFree", event_set)
        except Unanswered as exc:
            log.debug("freeing the XID event set failed: %s", exc)


def _register(gateway: NvmlGateway, event_set: object) -> list[int]:
    registered = []
    for index in range(gateway.count):
        opened = gateway.opened(index)
        if opened is None:
            continue
        try:
            gateway.call_or_unanswered("nvmlDeviceRegisterEvents", opened[0], XID_EVENT, event_set)
        except Unanswered as exc:
            log.info("GPU %d: no XID events: %s", index, exc)
            continue
        registered.append(index)
    return registered


def _wait(
    gateway: NvmlGateway,
    event_set: object,
    on_event: Callable[[Event], None],
    stopping: threading.Event,
) -> None:
    failing: str | None = None
    while not stopping.is_set():
        try:
            data = gateway.wait_event(event_set, WAIT_MS)
        except Unanswered as exc:
            if str(exc) != failing:  # said once, not every second
                failing = str(exc)
                log.warning("waiting for XID events failed: %s", exc)
            stopping.wait(WAIT_MS / 1000)
            continue
        failing = None
        if data is not None and data.eventType & XID_EVENT:
            on_event(xid_event(_index(gateway, data.device), int(data.eventData), time.time()))


def _index(gateway: NvmlGateway, handle: object) -> int | None:
    try:
        index: int = gateway.call_or_unanswered("nvmlDeviceGetIndex", handle)
    except Unanswered:
        return None
    return index
