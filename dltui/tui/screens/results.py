"""The results view (`v`): a row per benchmark, a column per server, each cell the figure and
its ratio to a chosen baseline; and, on its second tab, every phase with the telemetry that
explains it (utilization, tensor activity, power, PCIe and NVLink while the case ran); on its
third (`T`), each server's wiring beside what it measured over it.

`b` picks the baseline (the published reference, or a column), `m` the metric (throughput,
per watt, scaling efficiency), `s` sorts by the cursor's column, `e` exports what is shown,
`w` opens the what-if screen (predicted layouts of servers × GPUs).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static, TabbedContent, TabPane

from dltui.fleet.compare import (
    METRIC_WORDS,
    METRICS,
    REFERENCE,
    Cell,
    Comparison,
    Metric,
    Row,
    build,
)
from dltui.fleet.state import Fleet
from dltui.formatting import aligned, fmt_iterations, fmt_ratio
from dltui.protocol.bench_results import KernelResult
from dltui.result_text import model_figure
from dltui.tui.screens.export import ExportScreen
from dltui.tui.screens.topology import WiringSummary
from dltui.tui.view import Timebase
from dltui.tui.widgets.fitted_footer import FittedFooter
from dltui.tui.widgets.phase_table import PhaseTable
from dltui.tui.widgets.whole_column_table import Column, WholeColumnTable

REFRESH_S = 1.0
COMPARE_ACTIONS = frozenset({"baseline", "metric", "sort"})

Detail = Literal["full", "spread", "figure"]
DETAILS: tuple[Detail, ...] = ("full", "spread", "figure")
"""What a kernel's cell says beside its figure, the most first. Where the servers' columns do
not all fit, the count of iterations goes first, then the spread: a server's figures before
either (a noisy figure stays dimmed and its ratio flagged without them)."""


def figure_text(cell: Cell, metric: Metric, detail: Detail = "full") -> str:
    """The figure, with how far to trust it: a rate carries its spread and how many
    iterations were timed (as `detail` allows); an efficiency past 100% is flagged; a missing
    figure says why."""
    result = cell.result
    value = cell.value(metric)
    if value is None:
        return cell.missing(metric)
    if metric == "efficiency":
        return f"{value * 100:.1f}%" + (" ⚠ above ideal" if cell.implausible else "")
    if metric == "per_watt":
        kernel = isinstance(result, KernelResult)
        return f"{value:.3f} TFLOP/s/W" if kernel else f"{value:.2f} {cell.unit(metric)}"
    # The figure in a fixed width, so decimal points line up down a server's column.
    if isinstance(result, KernelResult):
        spread = result.spread_s / result.median_s if result.median_s else 0.0
        unit = "TFLOP/s" if result.tflops is not None else "GB/s" if result.gbps else "/s"
        words = [f"{aligned(value)} {unit}"]
        if detail != "figure":
            words.append(f"±{spread:.1%}")
        if detail == "full":
            words.append(fmt_iterations(result.iterations))
        if result.backend and detail != "figure":
            words.append(result.backend)
        return " ".join(words)
    return model_figure(result)


def ratio_text(ratio: float | None, noisy: bool = False) -> Text:
    """A ratio, flagged with "?" and dimmed where it rests on a noisy figure."""
    if ratio is None:
        return Text("")
    if noisy:
        return Text(f" {fmt_ratio(ratio)}?", style="dim")
    return Text(f" {fmt_ratio(ratio)}", style="bold green" if ratio >= 1 else "bold red")


def cell_text(
    row: Row, column: str, baseline: str, metric: Metric, detail: Detail = "full"
) -> Text:
    cell = row.cells.get(column)
    if cell is None:
        return Text("")
    if cell.result.error:
        style = "red"
    elif cell.implausible and metric == "efficiency":
        style = "bold yellow"
    else:
        style = "dim" if cell.noisy or cell.value(metric) is None else ""
    text = Text(figure_text(cell, metric, detail), style=style)
    return text + ratio_text(row.ratio(column, baseline, metric), row.noisy(column, baseline))


NO_RESULTS = "No results yet. Press b on the main screen to run a benchmark."
IN_A_REPLAY = (
    "A replay shows results as it reaches them: space plays it; g, then 100%, jumps to its end."
)
NO_RESULTS_YET = f"No results at this point of the replay. {IN_A_REPLAY}"


class ResultsScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,v", "app.pop_screen", "Back"),
        Binding("b", "baseline", "Baseline"),
        Binding("m", "metric", "Metric"),
        Binding("s", "sort", "Sort"),
        Binding("e", "export", "Export"),
        Binding("p", "tab('phases')", "Phases"),
        Binding("w", "app.whatif", "What-if"),
        Binding("c", "tab('compare')", "Compare"),
        Binding("T", "tab('topology')", "Topology", show=False),
    ]

    DEFAULT_CSS = """
    ResultsScreen {
        & #settings {
            height: auto;
            padding: 0 1;
            background: $boost;
            color: $text-muted;
        }
        & TabbedContent, TabPane, DataTable {
            height: 1fr;
        }
        & #empty {
            padding: 1 2;
            color: $text-muted;
        }
    }
    """

    baseline: reactive[str] = reactive(REFERENCE, init=False)
    """Every ratio is to this column, or to each result's published figure (REFERENCE)."""
    metric: reactive[Metric] = reactive("rate", init=False)
    sort: reactive[tuple[str | None, bool]] = reactive((None, False), init=False)
    """The column the rows are sorted by (None: in the order they ran), and whether the
    largest comes first."""

    def __init__(self, fleet: Fleet, timebase: Timebase, tab: str = "compare") -> None:
        super().__init__()
        self.fleet = fleet
        self.timebase = timebase
        self.tab = tab
        self.comparison = Comparison([], [])
        self._drawn: tuple[object, ...] | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="settings")
        with TabbedContent(initial=self.tab):
            with TabPane("Compare", id="compare"):
                yield Static(NO_RESULTS_YET if self.timebase.replay else NO_RESULTS, id="empty")
                yield WholeColumnTable(id="table", zebra_stripes=True)
            with TabPane("Phases (telemetry per case)", id="phases"):
                yield PhaseTable(self.fleet, self.timebase)
            with TabPane("Topology", id="topology"):
                yield WiringSummary(self.fleet)
        yield FittedFooter()

    def on_mount(self) -> None:
        self.sub_title = "results"
        self.refresh_table()
        # Arrows move between cells, not tabs.
        self.query_one("#table" if self.tab == "compare" else "PhaseTable").focus()
        self.set_interval(REFRESH_S, self.refresh_table)

    def watch_baseline(self) -> None:
        self.refresh_table()

    def watch_metric(self) -> None:
        self.refresh_table()

    def watch_sort(self) -> None:
        self.refresh_table()

    def refresh_table(self) -> None:
        fleet = self.fleet
        self.query_one(PhaseTable).refresh_rows()
        if self._view() == self._drawn:
            return
        self.comparison = comparison = build(fleet)
        if self.baseline != REFERENCE and self.baseline not in comparison.columns:
            self.set_reactive(ResultsScreen.baseline, REFERENCE)  # drawn just below
        self._drawn = self._view()
        self._draw(comparison)

    def _view(self) -> tuple[object, ...]:
        """What the table shows: the results, the phases, and how they are shown."""
        counts = sum(
            len(j.results) + len(j.model_results)
            for s in self.fleet.servers.values()
            for j in s.jobs.values()
        )
        return (counts, len(self.fleet.phases.phases), self.baseline, self.metric, self.sort)

    def _draw(self, comparison: Comparison) -> None:
        table = self.query_one("#table", WholeColumnTable)
        self.query_one("#empty").display = not comparison.rows
        table.display = bool(comparison.rows)
        sort_column, descending = self.sort
        arrow = " ▼" if descending else " ▲"
        first = "benchmark" + (" (last run first)" if descending and sort_column is None else "")
        rows = comparison.sorted_rows(sort_column, self.metric, descending)
        columns = []
        for column in comparison.columns:
            mark = "◆ " if column == self.baseline else ""
            sort = arrow if column == sort_column else ""
            forms = [[cell_text(row, column, self.baseline, self.metric, detail) for row in rows]
                     for detail in DETAILS]  # fmt: skip
            columns.append(Column(column, f"{mark}{column}{sort}", forms))
        table.show([Column("", first, [[Text(row.label) for row in rows]])], columns)
        base = "the published figure" if self.baseline == REFERENCE else self.baseline
        if sort_column is None:
            order = "in the order they ran"
        else:
            order = (
                f"by {sort_column}, {'largest' if descending else 'smallest'} first in each unit"
            )
        settings = Content.assemble(
            (METRIC_WORDS[self.metric], "bold"),
            " (m), ratio to ",
            (base, "bold"),
            " (b) · ",
            (order, "bold"),
            " (s sorts by the cursor's column) · e export",
        )
        self.query_one("#settings", Static).update(settings)

    def action_baseline(self) -> None:
        choices = [REFERENCE, *self.comparison.columns]
        self.baseline = choices[(choices.index(self.baseline) + 1) % len(choices)]

    def action_metric(self) -> None:
        self.metric = METRICS[(METRICS.index(self.metric) + 1) % len(METRICS)]

    def action_sort(self) -> None:
        """By the cursor's column, largest first; again: the other way round."""
        column = self.query_one("#table", WholeColumnTable).cursor_key or None
        sort_column, descending = self.sort
        self.sort = (column, not descending if column == sort_column else column is not None)

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """A click on a column's header of the Compare table sorts by it, as `s` does (the
        phases stay in the order the cases ran)."""
        if event.data_table.id != "table":
            return
        event.data_table.cursor_coordinate = event.data_table.cursor_coordinate._replace(
            column=event.column_index
        )
        self.action_sort()

    def action_export(self) -> None:
        self.app.push_screen(ExportScreen(self.comparison, self.baseline))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The baseline, the metric and the sort are the Compare table's: on another tab their
        keys would change it unseen, so they leave the footer there and do nothing. A tab's
        own key leaves the footer while it is shown."""
        if action in COMPARE_ACTIONS:
            return self.tab == "compare"
        if action == "tab":  # the keys of the other tabs, not the one shown
            return parameters[0] != self.tab
        return True

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """By key or by a click on the tab: the Compare settings show only beside Compare."""
        self.tab = event.tabbed_content.active
        self.query_one("#settings").display = self.tab == "compare"
        self.refresh_bindings()

    def action_tab(self, tab: str) -> None:
        """Show a tab and put the focus in it (← → move a column in the tables)."""
        self.query_one(TabbedContent).active = tab
        focus = {"compare": "#table", "phases": "PhaseTable", "topology": "WiringSummary"}
        self.query_one(focus[tab]).focus()
