"""Rates from cumulative counters: NVLink's bytes, the host's network and disk bytes.

A counter is read with the time it was read at; its rate is the difference over the time
between two reads. There is none on the first read, and none for a counter that went backwards
(a driver reload, a device removed) until it has moved forward from there. A read stamped no
later than the one before it (NVML answering from the same update) changes nothing: the last
rates stand.
"""

from __future__ import annotations

from collections.abc import Mapping


class CounterRates:
    """One set of counters, read again and again."""

    def __init__(self) -> None:
        self._previous: tuple[float, Mapping[str, float]] | None = None
        self._rates: dict[str, float] = {}

    def update(self, when: float, counts: Mapping[str, float]) -> dict[str, float]:
        """The rates (per second) since the previous read at `when` (seconds, any origin)."""
        previous = self._previous
        if previous is not None and when <= previous[0]:
            return dict(self._rates)
        self._previous = (when, counts)
        if previous is None:
            return {}
        seconds = when - previous[0]
        before = previous[1]
        self._rates = {
            name: (count - before[name]) / seconds
            for name, count in counts.items()
            if name in before and count >= before[name]
        }
        return dict(self._rates)
