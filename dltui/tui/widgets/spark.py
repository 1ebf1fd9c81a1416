"""Sparklines in eighth-blocks: a whole series in one line of text, cheap enough to redraw often."""

from __future__ import annotations

import math
from collections.abc import Sequence

BLOCKS = "▁▂▃▄▅▆▇█"
GAP = " "  # a NaN point: the link was down, nothing was measured


def level_char(fraction: float) -> str:
    """The block for a fraction of full scale, clamped to 0..1; NaN is a gap."""
    if math.isnan(fraction):
        return GAP
    index = round(min(max(fraction, 0.0), 1.0) * (len(BLOCKS) - 1))
    return BLOCKS[index]


def scale_top(values: Sequence[float], limit: float | None = None, floor: float = 0.0) -> float:
    """Full scale for a line: the larger of the field's limit and what was observed.

    `floor` keeps a quiet series from being stretched to full height (1 kB/s of PCIe traffic
    should not look like a saturated link).
    """
    observed = max((v for v in values if not math.isnan(v)), default=0.0)
    return max(limit or 0.0, observed, floor) or 1.0


def sparkline(values: Sequence[float], top: float, width: int) -> str:
    """The newest `width` values as blocks, newest at the right, padded on the left."""
    shown = values[-width:] if width > 0 else []
    return GAP * (width - len(shown)) + "".join(level_char(v / top) for v in shown)


CELL_SECONDS = 0.5
"""Time one sparkline cell covers: 40 cells show 20 s, not the 4 s one sample a cell would."""


def cells(
    points: Sequence[tuple[float, float]], width: int, seconds: float = CELL_SECONDS
) -> list[float]:
    """The newest `width` cells of `seconds` each, holding the largest value that fell in them.

    Cells are aligned to absolute time, so they do not shift as points arrive. A recorded gap
    (NaN) makes its cell a gap; a cell no point fell in repeats the one before it, so a series
    sampled slower than the cells (memory at 2 Hz, an agent at 1 Hz) draws as a line.
    """
    if not points or width <= 0:
        return []
    last_cell = math.floor(points[-1][0] / seconds)
    first_cell = last_cell - width + 1
    out = [math.nan] * width
    filled = [False] * width
    for t, value in points:
        index = math.floor(t / seconds) - first_cell
        if not 0 <= index < width:  # a clock-offset change can step time back a little
            continue
        if math.isnan(value):
            out[index], filled[index] = math.nan, True
        elif not filled[index] or value > out[index]:
            out[index], filled[index] = value, True
    if True not in filled:
        return []
    start = filled.index(True)
    for index in range(start + 1, width):
        if not filled[index]:
            out[index] = out[index - 1]
    return out[start:]


def cell_of(t: float, seconds: float = CELL_SECONDS) -> int:
    """The absolute index of the cell a time falls in (cells are aligned to absolute time)."""
    return math.floor(t / seconds)


PhaseSpan = tuple[float, float | None, int]
"""(start, end or None while running, case index) of a benchmark phase."""


def phase_marks(
    spans: Sequence[PhaseSpan], first_cell: int, count: int, seconds: float = CELL_SECONDS
) -> list[int]:
    """Per cell: 0 outside any phase, 1 or 2 inside one (alternating by case, so neighbours
    stay apart), 3 where a case starts."""
    marks = [0] * count
    last_cell = first_cell + count - 1
    for start, end, case in spans:
        begin = cell_of(start, seconds)
        stop = last_cell if end is None else cell_of(end, seconds)
        if stop < first_cell or begin > last_cell:
            continue
        for cell in range(max(begin, first_cell), min(stop, last_cell) + 1):
            marks[cell - first_cell] = 1 + case % 2
        if begin >= first_cell:
            marks[begin - first_cell] = 3
    return marks


EVENT_MARK = 4
"""A cell where a health event or alert happened (drawn over the phase bands)."""


def mark_events(
    marks: list[int], times: Sequence[float], first_cell: int, seconds: float = CELL_SECONDS
) -> list[int]:
    """`marks` with EVENT_MARK in each cell an event time falls in."""
    for t in times:
        index = cell_of(t, seconds) - first_cell
        if 0 <= index < len(marks):
            marks[index] = EVENT_MARK
    return marks


def chart(values: Sequence[float], top: float, width: int, height: int) -> list[str]:
    """A chart `height` rows tall, top row first, in eighth-blocks: the newest `width` values,
    newest at the right, padded on the left; NaN is a gap."""
    shown = values[-width:] if width > 0 else []
    pad = width - len(shown)
    levels = [
        None if math.isnan(v) else round(min(max(v / top, 0.0), 1.0) * height * 8) for v in shown
    ]
    rows = []
    for row in range(height - 1, -1, -1):
        chars = []
        for level in levels:
            if level is None:
                chars.append(GAP)
                continue
            eighths = min(max(level - row * 8, 0 if row else 1), 8)  # a zero still shows
            chars.append(BLOCKS[eighths - 1] if eighths else " ")
        rows.append(GAP * pad + "".join(chars))
    return rows
