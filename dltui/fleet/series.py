"""A fixed-size ring buffer of (time, value) points; NaN marks a gap."""

from __future__ import annotations

import math
from array import array

GAP = math.nan


class Series:
    """The last `capacity` points of one telemetry field, in compact float arrays.

    Memory is fixed at creation (16 bytes a point), so 64 servers × 8 GPUs × 20 fields cost a
    known amount however long the session runs; older history belongs to recordings.
    """

    __slots__ = ("_head", "_size", "_t", "_v", "capacity")

    def __init__(self, capacity: int = 1200) -> None:
        self.capacity = capacity
        self._t = array("d", bytes(8 * capacity))
        self._v = array("d", bytes(8 * capacity))
        self._head = 0
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def append(self, t: float, value: float) -> None:
        head = self._head
        self._t[head] = t
        self._v[head] = value
        self._head = (head + 1) % self.capacity
        if self._size < self.capacity:
            self._size += 1

    def mark_gap(self, t: float) -> None:
        if self._size and not math.isnan(self._v[self._head - 1]):
            self.append(t, GAP)

    def last(self) -> float | None:
        """The newest value, None when empty or when the newest point is a gap."""
        if not self._size:
            return None
        value = self._v[self._head - 1]
        return None if math.isnan(value) else value

    def last_time(self) -> float | None:
        return self._t[self._head - 1] if self._size else None

    def _ordered(self, n: int) -> range:
        n = min(n, self._size)
        start = self._head - n
        return range(start, start + n)

    def tail(self, n: int) -> list[float]:
        """The newest `n` values, oldest first; gaps are NaN."""
        values = self._v
        return [values[i] for i in self._ordered(n)]

    def points(self, n: int | None = None) -> list[tuple[float, float]]:
        """The newest `n` (default all) points as (time, value), oldest first."""
        t, v = self._t, self._v
        return [(t[i], v[i]) for i in self._ordered(self._size if n is None else n)]
