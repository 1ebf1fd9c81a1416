"""Charts many rows tall in braille, as btop and nvitop draw them: two points a character
across, four a character down, with a labelled y-axis in the field's unit and a time axis.

Pure text in, `Content` out: the panels, the detail screen and the overlay all draw with it.
A filled area shows one series; lines show several on one chart (the overlay), each in its
own colour. Behind the plot, a shaded band marks each benchmark case (`phase_marks`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from textual.content import Content

from dltui.formatting import SHORT, fmt_short
from dltui.tui.spark import BLOCKS, level_char

_LEFT = (0x40, 0x04, 0x02, 0x01)  # a braille cell's left dots, bottom to top
_RIGHT = (0x80, 0x20, 0x10, 0x08)
_FILL_LEFT = [sum(_LEFT[:n]) for n in range(5)]
_FILL_RIGHT = [sum(_RIGHT[:n]) for n in range(5)]
BAND_STYLES = ("", " on $foreground 6%", " on $foreground 12%", " on $accent 25%",
               " on $error 45%")  # fmt: skip
"""Backgrounds of chart cells outside a benchmark phase, inside one (alternating), at its start,
and where a health event or alert happened (spark.mark_events)."""
MUTED = "$foreground 35%"
"""A server we cannot hear any more: its last values, greyed."""
AXIS = SHORT
"""Cells of the y-axis labels."""
WINDOWS = (60.0, 600.0, 3600.0)
"""What `w` cycles through: a minute, ten minutes, an hour."""


def window_label(seconds: float) -> str:
    """'1 min', '10 min', '1 h'."""
    return f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds / 60:g} min"


def _levels(values: Sequence[float], top: float, dots: int) -> list[int | None]:
    """Each value's height in dots; a value at or above zero shows at least one dot."""
    return [
        None if math.isnan(value) else min(max(round(value / top * dots), 1), dots)
        for value in values
    ]


@cache
def _area_column(left: int | None, right: int | None, height: int) -> tuple[str, ...]:
    """One character column of a filled chart, top row first: two points' heights in dots."""
    if left is None and right is None:
        return (" ",) * height
    column = []
    for row in range(height - 1, -1, -1):
        bits = _FILL_LEFT[min(max((left or 0) - row * 4, 0), 4)]
        bits |= _FILL_RIGHT[min(max((right or 0) - row * 4, 0), 4)]
        column.append(chr(0x2800 + bits) if bits else " ")
    return tuple(column)


def area_rows(values: Sequence[float], top: float, height: int) -> list[str]:
    """A filled chart, top row first: `values` holds two points per character across."""
    levels = _levels(values, top, height * 4)
    if len(levels) % 2:
        levels.append(None)
    columns = [_area_column(left, right, height)
               for left, right in zip(levels[::2], levels[1::2], strict=True)]  # fmt: skip
    return ["".join(row) for row in zip(*columns, strict=True)] if columns else [""] * height


def _line_bits(values: Sequence[float], top: float, height: int) -> list[list[int]]:
    """One series as a line: per row (top first) and character, its braille dots. Each point
    joins the one before it with a vertical stroke, so a step reads as a line, not dots."""
    dots = height * 4
    levels = _levels(values, top, dots)
    width = (len(levels) + 1) // 2
    grid = [[0] * width for _ in range(height)]
    previous: int | None = None
    for index, level in enumerate(levels):
        if level is None:
            previous = None
            continue
        low, high = (level, level) if previous is None else sorted((previous, level))
        side = _LEFT if index % 2 == 0 else _RIGHT
        for dot in range(low, high + 1):
            row = (dot - 1) // 4
            grid[height - 1 - row][index // 2] |= side[(dot - 1) % 4]
        previous = level
    return grid


def line_rows(
    series: Sequence[Sequence[float]], top: float, height: int
) -> list[list[tuple[str, int]]]:
    """Several series as lines on one chart: per row, per character, the braille character and
    which series owns its colour (the one with the most dots there; -1 for blank)."""
    grids = [_line_bits(values, top, height) for values in series]
    width = max((len(grid[0]) for grid in grids if grid), default=0)
    rows = []
    for row in range(height):
        cells = []
        for column in range(width):
            bits, owner, most = 0, -1, 0
            for index, grid in enumerate(grids):
                mine = grid[row][column] if column < len(grid[row]) else 0
                bits |= mine
                count = mine.bit_count()
                if count and count >= most:
                    owner, most = index, count
            cells.append((chr(0x2800 + bits) if bits else " ", owner))
        rows.append(cells)
    return rows


def block_row(values: Sequence[float], top: float) -> str:
    """A one-row chart in eighth blocks, one point a character (finer than braille's four
    levels where only one row is free)."""
    return "".join(level_char(value / top) if top else BLOCKS[0] for value in values)


def axis_labels(top: float, unit: str, height: int) -> list[str]:
    """The y-axis, top row first: the full scale, half of it where there is room, and zero."""
    labels = [""] * height
    labels[0] = fmt_short(top, unit)
    if height >= 2:
        labels[-1] = "0"
    if height >= 5:
        labels[height // 2] = fmt_short(top / 2, unit) if height % 2 else ""
    return [label.rjust(AXIS) for label in labels]


def _ago(seconds: float) -> str:
    """'−60s', '−5m', '−1h': how long before now, in the largest unit it is a whole number of."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"−{seconds / 3600:g}h"
    if seconds >= 120 and seconds % 60 == 0:
        return f"−{seconds / 60:g}m"
    return f"−{seconds:g}s"


def time_axis(width: int, window: float) -> str:
    """'−60s ──── −30s ──── now' under a chart `width` characters wide."""
    left, middle = _ago(window), _ago(window / 2)
    if width < len(left) + len(middle) + 8:
        return f"{left} {'─' * max(width - len(left) - 5, 0)} now"[:width]
    half = (width - len(middle)) // 2
    first = "─" * max(half - len(left) - 2, 0)
    second = "─" * max(width - half - len(middle) - 5, 0)
    return f"{left} {first} {middle} {second} now"[:width]


def banded(text: str, color: str, marks: Sequence[int]) -> Content:
    """A chart row with each character's phase band behind it (`marks` aligned to the right
    end of `text`)."""
    pad = len(text) - len(marks)
    parts: list[tuple[str, str]] = [(text[:pad], color)] if pad > 0 else []
    start = 0
    for index in range(1, len(marks) + 1):
        if index == len(marks) or marks[index] != marks[start]:
            parts.append((text[pad + start : pad + index], color + BAND_STYLES[marks[start]]))
            start = index
    return Content.assemble(*parts)


@dataclass(frozen=True, slots=True)
class Plot:
    """One chart's figures: what to call it, what it reads now, its scale and its colour."""

    label: str
    value: str
    unit: str
    top: float
    color: str
    values: Sequence[float]
    """Two points per character across (one for a one-row chart)."""


GUTTER = 8
"""Cells of a chart's name and current value (seven at most, and a space), at its left."""
MARGIN = GUTTER + AXIS + 1
"""Cells beside the plot: name and value, y-axis labels and tick (one-row: value at right)."""


def plot_points(width: int, height: int) -> tuple[int, int]:
    """(characters, points) of plot in a chart `width` wide and `height` tall: two points a
    character in braille, one in a one-row block chart."""
    chars = max(width - MARGIN, 0)
    return chars, chars * (2 if height > 1 else 1)


def chart_lines(
    plot: Plot, width: int, height: int, marks: Sequence[int] = (), muted: bool = False
) -> list[Content]:
    """A chart `height` rows tall and `width` wide: its name and value at the left, the
    y-axis, then the plot; one row high, a block sparkline with the value at its right.
    `marks` are the phase bands per character; `muted` greys it (a server gone quiet)."""
    chars, points = plot_points(width, height)
    values = plot.values[-points:] if points else []
    marks = marks[-chars:] if chars else []
    color = MUTED if muted else plot.color
    value_style = "$text-muted" if muted else "bold"
    label = (plot.label.ljust(GUTTER)[:GUTTER], "$text-muted")
    if height <= 1:
        text = block_row(values, plot.top).rjust(chars)
        return [
            Content.assemble(
                label,
                banded(text, color, marks),
                " ",
                (plot.value.rjust(AXIS)[-AXIS:], value_style),
            )
        ]
    axis = axis_labels(plot.top, plot.unit, height)
    names = [label, (plot.value.ljust(GUTTER)[:GUTTER], value_style)]
    names += [("".ljust(GUTTER), "")] * (height - 2)
    lines = []
    for row, text in enumerate(area_rows(values, plot.top, height)):
        tick = "┤" if axis[row].strip() else "│"
        lines.append(
            Content.assemble(
                names[row],
                (axis[row] + tick, "$text-muted"),
                banded(text.rjust(chars), color, marks),
            )
        )
    return lines
