"""A server's health as its frames told it: the events it raised (and which conditions are
still up), and each GPU's latest health fields. The fleet keeps an `EventBook` per server; a
probe, the report and the TUI's event list read the same book and the same summary.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from dltui.protocol.fields import health_fields, throttle_reasons_in
from dltui.protocol.inventory import Inventory
from dltui.protocol.messages import ONCE_OPEN_S, Event, Sample
from dltui.protocol.wire import to_plain

MAX_EVENTS = 1000
"""Events kept per server: a flapping link cannot grow a long session's memory."""


@dataclass
class EventBook:
    """One server's events in arrival order, each once (an agent sends the conditions still
    up again to a client that reconnects), and the conditions up now."""

    events: deque[Event] = field(default_factory=lambda: deque(maxlen=MAX_EVENTS))
    raised: dict[tuple[str, int | None, str | None], Event] = field(default_factory=dict)
    _seen: set[tuple[int, float]] = field(default_factory=set)

    def add(self, event: Event) -> bool:
        """Take an event; False when it was seen already."""
        key = (event.id, event.wall)
        if key in self._seen:
            return False
        if len(self._seen) >= 4 * MAX_EVENTS:  # forget the oldest keys with their events
            self._seen = {(e.id, e.wall) for e in self.events}
        self._seen.add(key)
        self.events.append(event)
        if event.state == "raised":
            self.raised[event.condition] = event
        elif event.state == "resolved":
            self.raised.pop(event.condition, None)
        return True

    def worst(self) -> str | None:
        """The worst severity among the conditions up, or None when none is."""
        return worst_of(self.raised.values())

    def open_events(self, now: float | None = None) -> list[Event]:
        """The conditions up, then what happened once at warning or worse within ONCE_OPEN_S
        of `now` (the agent's clock; None: its newest event's time), newest last: what the
        header, the title and probe call open."""
        if now is None:
            now = self.events[-1].wall if self.events else 0.0
        once = []
        for event in reversed(self.events):  # newest first: stop at the first too old
            if now - event.wall > ONCE_OPEN_S:
                break
            if event.state == "once" and event.open_at(now):
                once.append(event)
        return [*self.raised.values(), *reversed(once)]


SEVERITIES = ("info", "warning", "critical")


def worst_of(events: Iterable[Event]) -> str | None:
    """The worst severity among these events, or None when there is none."""
    worst = worst_event(events)
    return worst.severity if worst is not None else None


def worst_event(events: Iterable[Event]) -> Event | None:
    """The worst of these events, the newest among equals; None when there is none."""
    return max(events, key=lambda e: (SEVERITIES.index(e.severity), e.wall), default=None)


def gpu_health(values: dict[str, float]) -> dict[str, Any]:
    """A GPU's health fields from a values map, with its throttle reasons in words."""
    found: dict[str, Any] = {name: values[name] for name in health_fields() if name in values}
    if "throttle" in values:
        found["throttle"] = throttle_reasons_in(int(values["throttle"]))
    return found


def health_summary(inventory: Inventory, sample: Sample | None, book: EventBook) -> dict[str, Any]:
    """The server's health as JSON: whether anything is open and the worst of it (as of the
    sample), per GPU its state, its link against the maximum and its health fields, then the
    conditions up, everything open, and every event seen."""
    latest = {gpu.index: gpu for gpu in sample.gpus} if sample is not None else {}
    gpus = []
    for info in inventory.gpus:
        reading = latest.get(info.index)
        entry: dict[str, Any] = {"index": info.index, "state": reading.state if reading else None,
                                 "pcie_gen_max": info.pcie_gen_max,
                                 "pcie_width_max": info.pcie_width_max}  # fmt: skip
        if reading is not None:
            entry |= gpu_health(reading.values)
        gpus.append(entry)
    opened = book.open_events(sample.wall if sample is not None else None)
    return {
        "ok": not opened,
        "worst": worst_of(opened),
        "open": [to_plain(event) for event in opened],
        "gpus": gpus,
        "raised": [to_plain(event) for event in book.raised.values()],
        "events": [to_plain(event) for event in book.events],
    }
