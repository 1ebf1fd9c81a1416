"""Charts of a server's totals in the rows its column has left: all its GPUs' utilization,
power and memory, the host's CPU and memory, traffic; as many as fit, the same ones on the
same rows in every column, with the time axis under them."""

from __future__ import annotations

from textual.content import Content

from dltui.tui.charts import total_plot
from dltui.tui.graph import MARGIN, chart_lines, time_axis
from dltui.tui.layout import filler_charts
from dltui.tui.widgets.panel import FleetPanel


class ServerCharts(FleetPanel):
    DEFAULT_CSS = """
    ServerCharts {
        padding: 0 1;
        height: 1fr;
    }
    """

    host_charted = False
    """Whether the host's panel above charts the CPU (panels mode): not charted again here."""

    def charts_now(self) -> bool:
        return True

    def lines(self, width: int) -> list[Content]:
        charts = self.view.total_charts
        if not self.server.gpus:  # its GPUs' rows are its host's
            charts = tuple(chart for chart in charts if chart.host)
        if self.host_charted:  # the host panel above draws the CPU already
            charts = tuple(chart for chart in charts if chart.name != "cpu")
        if not self.server.host and not self.server.gpus:
            why = "never reached" if self.server.inventory is None else "no samples yet"
            return [Content.styled(f"nothing measured: {why}", "$text-muted")]
        heights = filler_charts(self.content_size.height, len(charts))
        lines: list[Content] = []
        muted = self.muted
        for chart, height in zip(charts, heights, strict=False):
            frame = self.frame(width, height)
            plot = total_plot(chart, self.server, frame)
            if plot is None:
                lines.append(Content.styled(f"{chart.label:<7}not reported", "$text-disabled"))
                lines += [Content("")] * (height - 1)
                continue
            lines += chart_lines(plot, width, height, self.marks(frame), muted)
        if lines:
            axis = time_axis(width - MARGIN, self.view.window)
            lines.append(Content.styled(" " * MARGIN + axis, "$text-muted"))
        return lines
