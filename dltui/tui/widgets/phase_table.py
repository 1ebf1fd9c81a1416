"""Every benchmark phase with the telemetry seen while it ran: why one server is faster.

One row per case: where and what, how long, its figure, then the means over the GPUs it used
(utilization, tensor activity, power, PCIe and NVLink traffic) and its figure per watt.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from dltui.fleet.compare import kernel_row, model_row, server_names
from dltui.fleet.phases import Phase
from dltui.fleet.state import Fleet
from dltui.formatting import fmt_rate, model_figure, rate_text
from dltui.plans.scaling import throughput_unit
from dltui.protocol.messages import KernelResult, ModelResult

COLUMNS = ("server", "case", "s", "result", "util", "tensor", "power", "PCIe tx", "PCIe rx",
           "NVLink tx", "NVLink rx", "per W")  # fmt: skip


def _percent(value: float | None) -> str:
    return f"{value:.0f}%" if value is not None else "–"


def phase_cells(phase: Phase, server: str) -> list[Text]:
    t = phase.telemetry
    result = phase.result
    if result is None:
        figure = "running" if phase.end is None else "no result"
    elif result.error is not None:
        figure = "error"
    elif isinstance(result, KernelResult):
        figure = rate_text(result)
    else:
        figure = model_figure(result)
    seconds = f"{phase.end - phase.start:.1f}" if phase.end is not None else "…"
    watts = phase.watts
    per_watt = phase.per_watt
    unit = "TFLOP/s/W" if isinstance(result, KernelResult) else "/W"
    if isinstance(result, ModelResult):
        unit = throughput_unit(result) + "/W"
    rates = [fmt_rate(t[name]) if name in t else "–"
             for name in ("pcie_tx", "pcie_rx", "nvlink_tx", "nvlink_rx")]  # fmt: skip
    what = phase.label
    if isinstance(result, KernelResult):
        what = kernel_row(result)[1]
    elif result is not None:  # a sweep's rows differ only in how many processes ran
        unit = "GPU" if result.device == "cuda" else "proc"
        what = f"{model_row(result)[1]} ×{result.gpus} {unit}{'s' * (result.gpus != 1)}"
    cells = [
        server,
        what,
        seconds,
        figure,
        _percent(t.get("util_gpu")),
        _percent(t.get("tensor_active")),
        f"{watts:.0f} W" if watts is not None else "–",
        *rates,
        f"{per_watt:.3f} {unit}" if per_watt is not None else "–",
    ]
    return [
        Text(cell, justify="left" if index < 2 else "right") for index, cell in enumerate(cells)
    ]


class PhaseTable(DataTable[Text]):
    """The fleet's phases, or one server's (`source`). ← → scroll a whole column at a time,
    with the server and the case kept in view at the left."""

    DEFAULT_CSS = """
    PhaseTable {
        height: 1fr;
    }
    """

    def __init__(self, fleet: Fleet, source: str | None = None) -> None:
        super().__init__(zebra_stripes=True, cursor_type="row", fixed_columns=2)
        self.fleet = fleet
        self.source = source
        self._drawn: tuple[int, int] | None = None

    def on_mount(self) -> None:
        self.add_columns(*COLUMNS)
        self.refresh_rows()

    def _starts(self) -> list[int]:
        """Where each scrolling column begins, in cells past the fixed ones."""
        widths = [column.get_render_width(self) for column in self.ordered_columns]
        starts, x = [], 0
        for width in widths[self.fixed_columns :]:
            starts.append(x)
            x += width
        return starts

    def action_cursor_right(self) -> None:
        later = [x for x in self._starts() if x > self.scroll_x]
        if later:
            self.scroll_to(x=later[0], animate=False)

    def action_cursor_left(self) -> None:
        earlier = [x for x in self._starts() if x < self.scroll_x]
        self.scroll_to(x=earlier[-1] if earlier else 0, animate=False)

    def phases(self) -> list[Phase]:
        if self.source is None:
            return self.fleet.phases.phases
        server = self.fleet.servers.get(self.source)
        return server.phases if server is not None else []

    def refresh_rows(self) -> None:
        """Redraw when a phase started or ended, or the fleet moved while one runs."""
        phases = self.phases()
        running = any(phase.end is None for phase in phases)
        state = (len(phases), self.fleet.version if running else sum(p.end is None for p in phases))
        if state == self._drawn:
            return
        self._drawn = state
        names = server_names(self.fleet)
        at_end = self.cursor_row >= self.row_count - 1
        self.clear()
        for phase in phases:
            self.add_row(*phase_cells(phase, names.get(phase.source, phase.source)))
        if at_end and self.row_count:
            self.move_cursor(row=self.row_count - 1)
