"""Every benchmark phase with the telemetry seen while it ran: why one server is faster.

One row per case: where and what, how long, its figure, then the means over the GPUs it used
(utilization, tensor activity, power, PCIe and NVLink traffic) and its figure per watt.
"""

from __future__ import annotations

from rich.text import Text

from dltui.fleet.compare import kernel_row, model_row, server_names
from dltui.fleet.phases import Phase
from dltui.fleet.state import Fleet
from dltui.formatting import GB, aligned, counted
from dltui.plans.scaling import throughput, throughput_unit
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.tui.view import RUNNING_AT_END, Timebase
from dltui.tui.widgets.whole_column_table import Column, WholeColumnTable

COLUMNS = ("server", "case", "time s", "TFLOP/s", "GB/s", "img|tok/s", "util %", "tensor %",
           "power W", "PCIe tx GB/s", "PCIe rx GB/s", "NVLink tx GB/s", "NVLink rx GB/s",
           "per W")  # fmt: skip
"""One unit per column (in its heading), each number's decimal point under the others'."""
FIXED = 2
"""The columns that say what a row is (server and case): they stay while ← → bring in the rest."""
RATES = ("pcie_tx", "pcie_rx", "nvlink_tx", "nvlink_rx")


def _figure(value: float | None, whole: int = 4, places: int = 2) -> str:
    """A number of the column's unit, decimal points aligned; '–' in the units' place where
    there is none (a case too short for the field's readings, a field no GPU gave, or the time
    of a case whose start and end came together)."""
    if value is None:
        return "–".rjust(whole) + " " * (places + 1)
    return aligned(value, whole, places)


def phase_cells(phase: Phase, server: str, ended: bool) -> list[Text]:
    """The row of one phase; `ended`: its server's recording has played to its end."""
    t = phase.telemetry
    result = phase.result
    tflops = gbps = images = None
    state = ""
    if result is None and phase.end is None:
        state = RUNNING_AT_END if ended else "running"
    elif result is None:
        state = "no result"
    elif result.error is not None:
        state = "error"
    elif isinstance(result, KernelResult):
        tflops, gbps = result.tflops, result.gbps
    else:
        images = throughput(result)
    seconds = _figure(phase.seconds, 3, 3) if phase.end is not None else "…"
    per_watt = phase.per_watt
    unit = "TFLOP/s/W" if isinstance(result, KernelResult) else "/W"
    if isinstance(result, ModelResult):
        unit = throughput_unit(result) + "/W"
    rates = [_figure(t[name] / GB if name in t else None, 3, 3) for name in RATES]
    what = phase.label
    if isinstance(result, KernelResult):
        what = kernel_row(result)[1]
    elif result is not None:  # a sweep's rows differ only in how many processes ran
        device = "GPU" if result.device == "cuda" else "proc"
        what = f"{model_row(result)[1]} ×{counted(result.gpus, device)}"
    cells = [
        server,
        what,
        seconds,
        state or _figure(tflops, 3, 4),
        "" if state else _figure(gbps, 4, 2),
        "" if state else _figure(images, 5, 1),
        _figure(t.get("util_gpu"), 3, 0),
        _figure(t.get("tensor_active"), 3, 0),
        _figure(phase.watts, 4, 0),
        *rates,
        f"{per_watt:.3f} {unit}" if per_watt is not None else "–",
    ]
    # Fixed-width figures, flush with the right of their heading: their points line up.
    return [Text(cell if index < FIXED else cell.rjust(len(COLUMNS[index])))
            for index, cell in enumerate(cells)]  # fmt: skip


class PhaseTable(WholeColumnTable):
    """The fleet's phases, or one server's (`source`): the server and the case at the left, and
    of the figures as many as fit whole; ← → bring in those off either edge."""

    DEFAULT_CSS = """
    PhaseTable {
        height: 1fr;
    }
    """

    def __init__(self, fleet: Fleet, timebase: Timebase, source: str | None = None) -> None:
        super().__init__(zebra_stripes=True, cursor_type="row")
        self.fleet = fleet
        self.timebase = timebase
        self.source = source
        self._drawn: tuple[int, int] | None = None

    def on_mount(self) -> None:
        self.refresh_rows()

    def phases(self) -> list[Phase]:
        if self.source is None:
            return self.fleet.phases.phases
        server = self.fleet.servers.get(self.source)
        return server.phases if server is not None else []

    def refresh_rows(self) -> None:
        """Redraw when a phase started or ended, or the fleet moved while one runs (a replay
        reaches a recording's end with its last frame)."""
        phases = self.phases()
        running = any(phase.end is None for phase in phases)
        state = (len(phases), self.fleet.version if running else sum(p.end is None for p in phases))
        if state == self._drawn:
            return
        self._drawn = state
        names = server_names(self.fleet)
        at_end = self.cursor_row >= self.row_count - 1
        rows = [
            phase_cells(phase, names.get(phase.source, phase.source),
                        self.timebase.ended(phase.source))
            for phase in phases
        ]  # fmt: skip
        columns = [Column(heading, heading, [[row[index] for row in rows]])
                   for index, heading in enumerate(COLUMNS)]  # fmt: skip
        self.show(columns[:FIXED], columns[FIXED:])
        if at_end and self.row_count:
            self.move_cursor(row=self.row_count - 1)
