"""Eighth blocks (one-row charts, per-core bars, the table's bars) and the phase bands behind
charts."""

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


def cell_of(t: float, seconds: float) -> int:
    """The absolute index of the cell a time falls in (cells are aligned to absolute time)."""
    return math.floor(t / seconds)


PhaseSpan = tuple[float, float | None, int]
"""(start, end or None while running, case index) of a benchmark phase."""


def phase_marks(
    spans: Sequence[PhaseSpan], first_cell: int, count: int, seconds: float
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
    marks: list[int], times: Sequence[float], first_cell: int, seconds: float
) -> list[int]:
    """`marks` with EVENT_MARK in each cell an event time falls in."""
    for t in times:
        index = cell_of(t, seconds) - first_cell
        if 0 <= index < len(marks):
            marks[index] = EVENT_MARK
    return marks


PARTS = " ▏▎▍▌▋▊▉"


def hbar(fraction: float | None, width: int) -> str:
    """A bar `width` cells long filled to `fraction` of full scale in eighths of a cell; blank
    for no value."""
    if fraction is None or math.isnan(fraction) or width <= 0:
        return " " * max(width, 0)
    eighths = round(min(max(fraction, 0.0), 1.0) * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (PARTS[part] if part else "")
    return text.ljust(width)
