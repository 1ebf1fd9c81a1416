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
where another column has one and this one not."""
NO_JOB_ROWS = 1
""""no benchmark run": while no server on screen has run one."""
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
    job: int = JOB_ROWS
    """Rows of the job lines at the top: JOB_ROWS once a server on screen has run a job."""
    gpu_rows_shown: int = 0
    """Rows of panels on screen at once (panels mode); fewer than `gpu_rows()` when they do
    not all fit, and then a line under them says how many more there are."""

    def gpu_rows(self) -> int:
        """Rows of panels the server with most GPUs needs (panels mode)."""
        return -(-self.gpus // self.gpu_columns) if self.gpus else 0

    def more_line(self) -> bool:
        """Whether some rows of panels are off screen: the "N more GPUs ↓" line shows."""
        return not self.compact and self.gpu_rows_shown < self.gpu_rows()

    def gpu_area(self) -> int:
        """Rows the GPUs take (the table, or the rows of panels on screen and the line that
        says how many more) in a column; a server without GPUs fills them with its host's
        charts instead."""
        if self.compact:
            return self.table
        return self.gpu_rows_shown * self.gpu_height + self.more_line()


CORE_LABEL = "cores "
"""Before the per-core bars' first line (blanks before the others)."""


def core_rows(cores: int, width: int) -> int:
    """Lines of one-block-per-core bars in `width` cells, after their label."""
    return -(-cores // max(width - len(CORE_LABEL), 1)) if cores else 0


def split(total: int, parts: int) -> tuple[int, ...]:
    """`total` rows shared by `parts` charts, the first ones taking what does not divide."""
    if parts <= 0:
        return ()
    base, extra = divmod(max(total, 0), parts)
    return tuple(base + (index < extra) for index in range(parts))


def plan(
    height: int,
    width: int,
    gpus: int,
    cores: int,
    metrics: int,
    mode: str = "auto",
    jobs: bool = True,
) -> Layout:
    """The layout of a column body `height` × `width` for servers with up to `gpus` GPUs and
    `cores` cores, whose panels chart `metrics` fields. `mode` is auto, compact or panels;
    `jobs`: whether a server on screen has run a job (else its lines take one row)."""
    job = JOB_ROWS if jobs else NO_JOB_ROWS
    inner = width - 4  # a panel's borders and padding
    host_panel = HOST_PANEL_FIXED + core_rows(cores, inner)
    columns = max(1, min(gpus, width // PANEL_MIN_WIDTH)) if gpus else 1
    panel_rows = -(-gpus // columns) if gpus else 0
    room = height - job - host_panel
    gpu_height = room // panel_rows if panel_rows else 0
    chart_room = gpu_height - 2
    needed = metrics * PANEL_CHART_ROWS - metrics // 4
    fits = bool(gpus) and metrics > 0 and chart_room >= needed
    compact = mode == "compact" or (mode == "auto" and gpus > 0 and not fits)
    if compact:
        table = 1 + gpus if gpus else 0
        filler = height - job - HOST_LINE_ROWS - table
        return Layout(True, gpus, HOST_LINE_ROWS, table, 1, 0, (), max(filler, 0), job)
    # Forced panels on a screen too small for them all: as many rows of panels as fit (each
    # chart a row at least), the rest a keypress away (one scroll for every column), and the
    # host in a line where its panel would leave no room for one row of GPUs.
    least = 2 + metrics
    if panel_rows and room < min(panel_rows * least, least + 1):
        host_panel = HOST_LINE_ROWS
        room = height - job - host_panel
        gpu_height = room // panel_rows
    shown = panel_rows
    if panel_rows * max(gpu_height, least) > room:
        shown = max((room - 1) // least, 1)  # a line under them says how many more
        # Where not even one row fits every chart, the last charts give way, not the screen.
        gpu_height = max((room - 1) // shown, 3)
    elif gpus:
        gpu_height = max(gpu_height, least)
    charts = split(gpu_height - 2, metrics)
    more = shown < panel_rows
    filler = room - shown * gpu_height - more
    return Layout(
        False, gpus, host_panel, 0, columns, gpu_height, charts, max(filler, 0), job, shown
    )


def filler_charts(rows: int, available: int) -> tuple[int, ...]:
    """Rows of each of the server's total charts that fit in `rows` (a row for the time axis
    under them), from the `available` ones in order."""
    count = min(available, (rows - 1) // FILLER_CHART_ROWS)
    return split(rows - 1, count) if count > 0 else ()
