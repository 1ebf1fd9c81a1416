"""How fast to sample: as fast as the most demanding consumer needs, never faster than the agent's
`--rate`, and slowly when nobody is looking; and how long samples may wait to be sent together.

A client says its rate when it subscribes. A scraper says nothing: its rate is read from the gaps
between its scrapes (the shortest of the last few, so two scrapers count as the faster one),
rounded up to a step of RATE_STEPS so that a scraper's jitter does not move the rate, and
forgotten once it has missed a few scrapes. An agent with a 15 s scraper and no client samples
every 5 s (IDLE_HZ), not ten times a second; one whose scraper comes every second samples once
a second; a client subscribing at 10 Hz raises the rate at once. A client may also let its
samples wait up to `batch_s` at the agent (the TUI redraws twice a second, so it waits half a
second): samples are then sent in batches, as long as every subscribed client allows.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable

IDLE_HZ = 0.2
"""With no client and no scraper, a sample every 5 s keeps the latest values, and each GPU's
state, current for whoever comes next."""
RATE_STEPS = (0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)
SCRAPES_KEPT = 4
SCRAPER_GONE = 3.0
"""A scraper that has not come for this many of its intervals no longer counts."""


class SamplingDemand:
    """The sampling rate wanted by the clients and scrapers now; `apply` is told each change.

    Clients change on the event loop, scrapes arrive on the metrics server's threads and the
    sampler's ticks look in from its own: one lock keeps them in step.
    """

    def __init__(
        self,
        max_hz: float,
        apply: Callable[[float], object],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_hz = max_hz
        self._apply = apply
        self._clock = clock
        self._lock = threading.Lock()
        self._clients: dict[object, tuple[float, float]] = {}  # client: (rate_hz, batch_s)
        self._scrapes: deque[float] = deque(maxlen=SCRAPES_KEPT)
        self._scraper_hz = 0.0
        self._scraper_until = float("inf")
        self.rate_hz = min(max_hz, IDLE_HZ)
        self.batch_s = 0.0
        """How long a sample may wait to be sent with later ones: what every client allows."""

    @property
    def clients(self) -> int:
        """Clients subscribed now."""
        return len(self._clients)

    def subscribe(self, client: object, rate_hz: float | None, batch_s: float = 0.0) -> None:
        """`client` wants samples at `rate_hz`, each sent within `batch_s`; None: no more (it
        unsubscribed or left)."""
        with self._lock:
            if rate_hz is None:
                self._clients.pop(client, None)
            else:
                self._clients[client] = (rate_hz, batch_s)
            self.batch_s = min((batch for _, batch in self._clients.values()), default=0.0)
            self._update()

    def scraped(self) -> None:
        """A scrape now; any thread."""
        with self._lock:
            now = self._clock()
            self._scrapes.append(now)
            gaps = [b - a for a, b in itertools.pairwise(self._scrapes) if b > a]
            if gaps:
                interval = min(gaps)
                wanted = 1.0 / interval
                self._scraper_hz = next((step for step in RATE_STEPS if step >= wanted * 0.9),
                                        RATE_STEPS[-1])  # fmt: skip
                self._scraper_until = now + SCRAPER_GONE * interval
            self._update()

    def check(self) -> None:
        """Forget a scraper that stopped coming; called on each sample, so it costs a compare
        unless one has."""
        if self._clock() > self._scraper_until:
            with self._lock:
                self._scraper_hz, self._scraper_until = 0.0, float("inf")
                self._scrapes.clear()
                self._update()

    def _update(self) -> None:
        wanted = max(IDLE_HZ, self._scraper_hz, *(rate for rate, _ in self._clients.values()))
        rate = min(self.max_hz, wanted)
        if rate != self.rate_hz:
            self.rate_hz = rate
            self._apply(rate)
