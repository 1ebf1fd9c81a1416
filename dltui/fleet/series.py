"""A ring buffer of (time, value) points with an hour of coarser history; NaN marks a gap.

The newest `capacity` points are kept as they came (a minute or two at 10 Hz: what the one-
minute chart draws point by point). A point that falls off the ring is folded into a bucket of
`BUCKET_S` seconds that keeps the largest value in it, for `HISTORY_S` seconds: what the ten-
minute and one-hour charts draw, each of whose cells spans several seconds anyway.
"""

from __future__ import annotations

import math
from array import array

GAP = math.nan
EMPTY = -math.inf
"""A bucket or cell no point fell in (telemetry values are never -inf)."""
HISTORY_S = 3600.0
BUCKET_S = 2.0
BUCKETS = int(HISTORY_S / BUCKET_S)
_NO_BUCKETS = array("f", [EMPTY]) * BUCKETS


class Series:
    """The last `capacity` points of one telemetry field, and an hour of its peaks.

    Memory is fixed (16 bytes a point, 4 bytes a bucket once the ring first wraps), so 64
    servers × 8 GPUs × 20 fields cost a known amount however long the session runs; older
    history belongs to recordings.
    """

    __slots__ = ("_bucket", "_coarse", "_head", "_memo", "_size", "_t", "_v", "capacity")

    def __init__(self, capacity: int = 1200) -> None:
        self.capacity = capacity
        self._t = array("d", bytes(8 * capacity))
        self._v = array("d", bytes(8 * capacity))
        self._head = 0
        self._size = 0
        self._coarse: array[float] | None = None
        self._bucket = 0
        """The newest bucket's number (time // BUCKET_S)."""
        self._memo: tuple[float, int, float, list[float], int] | None = None
        """The last cells asked for (seconds, count, the newest point's time then, the values
        before filling in, the first cell): the next ask, a moment later, works out again only
        the cells from that point's on."""

    def __len__(self) -> int:
        return self._size

    def append(self, t: float, value: float) -> None:
        head = self._head
        if self._size == self.capacity:
            self._fold(self._t[head], self._v[head])
        else:
            self._size += 1
        self._t[head] = t
        self._v[head] = value
        head += 1
        self._head = 0 if head == self.capacity else head

    def _fold(self, t: float, value: float) -> None:
        """Keep a point leaving the ring as its bucket's peak (a gap in a bucket wins)."""
        bucket = int(t // BUCKET_S)
        coarse = self._coarse
        if coarse is None:
            coarse = self._coarse = array("f", _NO_BUCKETS)
            self._bucket = bucket - 1
        newest = self._bucket
        if bucket > newest:
            for skipped in range(newest + 1, min(bucket, newest + BUCKETS + 1)):
                coarse[skipped % BUCKETS] = EMPTY
            self._bucket = bucket
            coarse[bucket % BUCKETS] = value
        elif bucket > newest - BUCKETS:  # a clock that stepped back: into its bucket
            old = coarse[bucket % BUCKETS]
            if value != value or (old == old and value > old):
                coarse[bucket % BUCKETS] = value

    def mark_gap(self, t: float) -> None:
        if self._size and not math.isnan(self._v[self._head - 1]):
            self.append(t, GAP)

    def last(self) -> float | None:
        """The newest value, None when empty or when the newest point is a gap."""
        if not self._size:
            return None
        value = self._v[self._head - 1]
        return None if math.isnan(value) else value

    def latest(self) -> tuple[float, float] | None:
        """The newest point that is not a gap, as (time, value): what an offline server
        showed last."""
        for index in reversed(self._ordered(self._size)):
            value = self._v[index % self.capacity]
            if not math.isnan(value):
                return self._t[index % self.capacity], value
        return None

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

    def _first_at(self, since: float) -> int:
        """The logical index (0: the oldest kept point) of the first point at or after `since`."""
        t, capacity, start = self._t, self.capacity, self._head - self._size
        low, high = 0, self._size
        while low < high:
            middle = (low + high) // 2
            if t[(start + middle) % capacity] < since:
                low = middle + 1
            else:
                high = middle
        return low

    def cells(self, end: float, seconds: float, count: int) -> list[float]:
        """The `count` cells of `seconds` each up to the one holding `end`, oldest first, each
        the largest value that fell in it. Cells are aligned to absolute time, so they do not
        shift as points arrive. A gap makes its cell NaN; a cell no point fell in repeats the
        one before it (a series sampled slower than the cells draws as a line); cells before
        the first point are NaN.

        A chart asks again a few times a second as time moves on: the cells it had are kept,
        and only the newest (where points arrive) are worked out again."""
        if count <= 0 or seconds <= 0:
            return []
        first_cell = math.floor(end / seconds) - count + 1
        memo = self._memo
        redo, raw = 0, [EMPTY] * count
        if memo is not None and memo[0] == seconds and memo[1] == count:
            seen_until, kept = memo[2], memo[3]
            shift = first_cell - memo[4]
            # Points since come at or after the newest one it had: from its cell on, again.
            redo = min(max(math.floor(seen_until / seconds) - first_cell, 0), count - shift)
            if 0 <= shift < count and redo > 0:
                raw = kept[shift : shift + redo] + [EMPTY] * (count - redo)
            else:
                redo = 0
        self._fill(raw, first_cell, redo, seconds)
        newest = self.last_time()
        self._memo = (seconds, count, -math.inf if newest is None else newest, raw, first_cell)
        out = raw.copy()
        previous = GAP
        for index, value in enumerate(out):
            if value == EMPTY:
                out[index] = previous
            else:
                previous = value
        return out

    def _fill(self, raw: list[float], first_cell: int, start: int, seconds: float) -> None:
        """Fold every point (bucket peaks, then points as they came) into the cells of `raw`
        from `start` on; raw[0] is cell `first_cell`."""
        count = len(raw)
        since = (first_cell + start) * seconds
        oldest = self._t[(self._head - self._size) % self.capacity] if self._size else math.inf
        coarse = self._coarse
        if coarse is not None and since < oldest:
            newest = min(self._bucket, int(oldest // BUCKET_S))
            for bucket in range(max(int(since // BUCKET_S), self._bucket - BUCKETS + 1),
                                newest + 1):  # fmt: skip
                value = coarse[bucket % BUCKETS]
                if value == EMPTY:
                    continue
                index = max(math.floor(bucket * BUCKET_S / seconds) - first_cell, start)
                if index < count:
                    old = raw[index]
                    if value != value or (old == old and value > old):
                        raw[index] = value
        scale = 1.0 / seconds
        begin = self._first_at(since)
        physical = (self._head - self._size + begin) % self.capacity
        remaining = self._size - begin
        while remaining > 0:  # the ring in at most two runs
            stop = min(physical + remaining, self.capacity)
            for t, value in zip(self._t[physical:stop], self._v[physical:stop], strict=True):
                index = int(t * scale) - first_cell
                if not start <= index < count:  # a clock-offset change can step time back
                    continue
                old = raw[index]
                if value != value or (old == old and value > old):
                    raw[index] = value
            remaining -= stop - physical
            physical = 0
