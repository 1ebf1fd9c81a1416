"""Every event the agent raises, in one place: numbered, written to the agent's log (so a
headless agent's alerts are seen with no client), passed through the `event KIND` alert rules,
kept while its condition is up (for clients that log in later) and published.

Events come from two threads: the sampler's (health and alert rules, from each sample) and the
XID watcher's. They are rare; a lock keeps their numbering and the conditions in order, and
`publish` must be safe to call from any thread (the agent hands the frame to its event loop).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections import Counter, deque
from collections.abc import Callable

from dltui.agent.alerts import AlertRules, Rule
from dltui.agent.health import HealthCheck
from dltui.protocol.inventory import Inventory
from dltui.protocol.messages import Event, Sample

log = logging.getLogger(__name__)

ONCE_KEPT = 32
"""Events that happened once kept for clients that log in later (a flood keeps the latest)."""
LOG_LEVELS = {"info": logging.INFO, "warning": logging.WARNING, "critical": logging.ERROR}


class EventLog:
    def __init__(
        self, inventory: Inventory, rules: list[Rule], publish: Callable[[Event], None]
    ) -> None:
        self._health = HealthCheck(inventory)
        self._alerts = AlertRules(rules)
        self._publish = publish
        self._lock = threading.Lock()
        self._count = 0
        self._raised: dict[tuple[str, int | None, str | None], Event] = {}
        """Conditions up now: what a client that logs in is told first."""
        self._once: deque[Event] = deque(maxlen=ONCE_KEPT)
        """The latest events that happened once at warning or worse: told too while open."""
        self._counts: Counter[tuple[str, str]] = Counter()

    def observe(self, sample: Sample) -> None:
        """A sample's health and alert-rule events (the sampler's thread)."""
        found = self._health.observe(sample)
        if self._alerts.rules:
            found += self._alerts.observe(sample)
        if found:
            self.add(found)

    def add(self, events: list[Event]) -> None:
        """Number, log, keep and publish events, and the alerts they fire (any thread)."""
        done = []
        with self._lock:
            waiting = list(events)
            while waiting:
                event = waiting.pop(0)
                self._count += 1
                event = dataclasses.replace(event, id=self._count)
                if event.state == "raised":
                    self._raised[event.condition] = event
                elif event.state == "resolved":
                    self._raised.pop(event.condition, None)
                elif event.severity != "info":
                    self._once.append(event)
                if event.state != "resolved":
                    self._counts[event.kind, event.severity] += 1
                if event.kind != "alert":
                    waiting += self._alerts.on_event(event)
                done.append(event)
        for event in done:
            where = f"GPU {event.gpu}" if event.gpu is not None else "host"
            log.log(LOG_LEVELS[event.severity], "event %d, %s %s on %s: %s", event.id,
                    event.severity, event.kind, where, event.detail)  # fmt: skip
            self._publish(event)

    def raised(self) -> list[Event]:
        """The conditions up now, oldest first."""
        with self._lock:
            return sorted(self._raised.values(), key=lambda event: event.id)

    def standing(self, now: float) -> list[Event]:
        """What a client that logs in is told first, oldest first: the conditions up, and what
        happened once and is still open at `now` (an XID a minute ago)."""
        with self._lock:
            found = [*self._raised.values(), *(e for e in self._once if e.open_at(now))]
        return sorted(found, key=lambda event: event.id)

    def counts(self) -> dict[tuple[str, str], int]:
        """(kind, severity) -> events raised or happened since the agent started."""
        with self._lock:
            return dict(self._counts)
