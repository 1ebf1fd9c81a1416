"""How tall each part of a server's column is: one answer for every column on screen, so that
servers line up row for row (the same chart on the same row in every column, whatever one
server has extra to say).

Pure arithmetic on the terminal's size and what the servers have (GPU count, cores, charts);
the strip computes it and each column applies it.
"""

from __future__ import annotations

from dataclasses import dataclass

HEADER_ROWS = 4
"""Name, GPUs, link state, and one line of detail (rtt and offset, or why it is down)."""
JOB_ROWS = 3
"""A job's state and progress, its current case (or why it failed), its latest result; blank
without one."""
HOST_LINE_ROWS = 1
PANEL_CHART_ROWS = 2
"""A chart needs two rows to be a chart (eight braille levels); fewer and the table is better
(a quarter of them, the last ones, may make do with one)."""
PANEL_MIN_WIDTH = 64
"""GPU panels go side by side where a column has this much width for each."""
HOST_PANEL_FIXED = 2 + PANEL_CHART_ROWS + 1
"""The host panel in panels mode: borders, the cpu chart, a line of memory, load, net, disk;
plus a row per line of core bars."""
FILLER_CHART_ROWS = 3
"""The least a chart of the server's totals gets below the compact table."""


@dataclass(frozen=True, slots=True)
class Layout:
    compact: bool
    gpus: int
    """The most GPUs a shown server has: every column makes room for as many."""
    host: int
    """Rows of the host block (a line in compact mode, a panel otherwise)."""
    table: int
    """Rows of the compact GPU table: a header and a row per GPU of the server with most."""
    gpu_columns: int
    """GPU panels side by side (panels mode)."""
    gpu_height: int
    """Rows of each GPU panel, borders included (panels mode)."""
    chart_rows: tuple[int, ...]
    """Rows of each GPU chart inside a panel, in the order of the metrics."""
    filler: int
    """Rows left under the table or panels for charts of the server's totals."""

    def gpu_area(self) -> int:
        """Rows the GPUs take (the table, or the rows of panels) in a column; a server without
        GPUs fills them with its host's charts instead."""
        if self.compact:
            return self.table
        return -(-self.gpus // self.gpu_columns) * self.gpu_height


def core_rows(cores: int, width: int) -> int:
    """Lines of one-block-per-core bars in `width` cells."""
    return -(-cores // max(width, 1)) if cores else 0


def split(total: int, parts: int) -> tuple[int, ...]:
    """`total` rows shared by `parts` charts, the first ones taking what does not divide."""
    if parts <= 0:
        return ()
    base, extra = divmod(max(total, 0), parts)
    return tuple(base + (index < extra) for index in range(parts))


def plan(
    height: int, width: int, gpus: int, cores: int, metrics: int, mode: str = "auto"
) -> Layout:
    """The layout of a column body `height` × `width` for servers with up to `gpus` GPUs and
    `cores` cores, whose panels chart `metrics` fields. `mode` is auto, compact or panels."""
    inner = width - 4  # a panel's borders and padding
    host_panel = HOST_PANEL_FIXED + core_rows(cores, inner)
    columns = max(1, min(gpus, width // PANEL_MIN_WIDTH)) if gpus else 1
    panel_rows = -(-gpus // columns) if gpus else 0
    room = height - JOB_ROWS - host_panel
    gpu_height = room // panel_rows if panel_rows else 0
    chart_room = gpu_height - 2
    needed = metrics * PANEL_CHART_ROWS - metrics // 4
    fits = bool(gpus) and metrics > 0 and chart_room >= needed
    compact = mode == "compact" or (mode == "auto" and gpus > 0 and not fits)
    if compact:
        table = 1 + gpus if gpus else 0
        filler = height - JOB_ROWS - HOST_LINE_ROWS - table
        return Layout(True, gpus, HOST_LINE_ROWS, table, 1, 0, (), max(filler, 0))
    gpu_height = max(gpu_height, 2 + metrics)  # forced panels on a small screen: they scroll
    charts = split(gpu_height - 2, metrics)
    filler = room - panel_rows * gpu_height
    return Layout(False, gpus, host_panel, 0, columns, gpu_height, charts, max(filler, 0))


def filler_charts(rows: int, available: int) -> tuple[int, ...]:
    """Rows of each of the server's total charts that fit in `rows` (a row for the time axis
    under them), from the `available` ones in order."""
    count = min(available, (rows - 1) // FILLER_CHART_ROWS)
    return split(rows - 1, count) if count > 0 else ()
