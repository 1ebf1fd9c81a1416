"""The what-if table: a row per layout of servers × GPUs, predicted images/s and efficiency
as bars, the measured figure beside the prediction where the results hold one, and the share
of the step spent waiting on communication. Every predicted column says so in its heading."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.widgets import DataTable

from dltui.predict.whatif import Row
from dltui.recording.whatif import WhatIfView, images
from dltui.tui.spark import hbar

HEADINGS = ("layout", "GPUs", "predicted\nimages/s", "predicted\nefficiency",
            "predicted\nvs 1 server", "measured", "predicted\ncomm wait")  # fmt: skip
"""Two lines each, so that the table fits 80 columns."""
BARS = (2, 3)
"""The columns whose cells start with a bar; the bars share the width the others leave."""
BAR_WIDTHS = (4, 24)
PADDING = 2
"""A DataTable's cell padding, both sides together."""


def heading_width(heading: str) -> int:
    return max(cell_len(line) for line in heading.splitlines())


def bar_width(table_width: int, body: list[list[Text]]) -> int:
    """As wide as the table allows once every other cell has its room, within BAR_WIDTHS."""
    fixed = 1  # the scroll bar's gutter
    for index, heading in enumerate(HEADINGS):
        widths = [cell_len(cells[index].plain) for cells in body]
        fixed += max([0 if index in BARS else heading_width(heading), *widths]) + PADDING
    low, high = BAR_WIDTHS
    return max(low, min(high, (table_width - fixed) // len(BARS)))


def row_cells(row: Row, fastest: float, width: int) -> list[Text]:
    """One layout's cells; the images/s bar is to the fastest layout's scale."""
    p = row.prediction
    layout, gpus = Text(str(p.layout), style="bold"), Text(f"{p.layout.total:,}", justify="right")
    measured = row.measured_images_per_s
    shown = Text(images(measured) if measured else "–", justify="right")
    if row.error is not None:
        shown.append(f" {row.error:+.0%}", style="dim")
    if p.missing:
        why = p.missing.partition(":")[0]
        return [layout, gpus, Text(why, style="dim italic"), Text(""), Text(""), shown, Text("")]
    fill = p.images_per_s / fastest if fastest else None
    rate = Text.assemble((hbar(fill, width), "green"), f" {images(p.images_per_s):>9}")
    efficiency = Text.assemble((hbar(p.efficiency_vs_gpu, width), "cyan"),
                               f" {p.efficiency_vs_gpu:>6.1%}")  # fmt: skip
    vs_server = row.efficiency_vs_server
    return [layout, gpus, rate, efficiency,
            Text(f"{vs_server:.1%}" if vs_server else "–", justify="right"), shown,
            Text(f"{p.waiting_share:.0%}", justify="right")]  # fmt: skip


class WhatIfTable(DataTable[Text]):
    """The rows of a WhatIfView; redrawn whole (a handful of rows)."""

    DEFAULT_CSS = """
    WhatIfTable {
        height: auto;
        max-height: 1fr;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, zebra_stripes=True, cursor_type="row", header_height=2)
        self.view: WhatIfView | None = None

    def show(self, view: WhatIfView) -> None:
        self.view = view
        self._draw()

    def on_resize(self, event: events.Resize) -> None:
        self._draw()

    def _draw(self) -> None:
        view = self.view
        if view is None:
            return
        rates = [row.prediction.images_per_s for row in view.table.rows]
        fastest = max(rates, default=0.0)
        bare = [row_cells(row, fastest, 0) for row in view.table.rows]
        width = bar_width(self.size.width or self.app.size.width, bare)
        body = [row_cells(row, fastest, width) for row in view.table.rows]
        cursor = self.cursor_coordinate
        self.clear(columns=True)
        for index, heading in enumerate(HEADINGS):
            widths = [heading_width(heading), *(cell_len(cells[index].plain) for cells in body)]
            self.add_column(heading, key=heading, width=max(widths))
        for row, cells in zip(view.table.rows, body, strict=True):
            self.add_row(*cells, key=str(row.prediction.layout))
        self.cursor_coordinate = self.validate_cursor_coordinate(cursor)
