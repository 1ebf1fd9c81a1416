"""One GPU in panels mode: a chart per field, as tall as the layout gives, the same fields on
the same rows in every column (a field this GPU does not report says so in its rows)."""

from __future__ import annotations

from textual.content import Content

from dltui.fleet.state import GpuView, ServerView
from dltui.formatting import counted
from dltui.protocol.fields import throttle_reasons_in
from dltui.tui import danger
from dltui.tui.charts import Chart, gpu_info, gpu_plot
from dltui.tui.graph import MARGIN, chart_lines, time_axis, window_label
from dltui.tui.layout import split
from dltui.tui.view import MonitorView
from dltui.tui.widgets.panel import FleetPanel


def throttle_text(gpu: GpuView) -> str:
    """Why the clocks are down, in words; 'idle' alone is normal and not worth saying."""
    series = gpu.series.get("throttle")
    point = series.latest() if series is not None else None
    words = throttle_reasons_in(int(point[1])) if point is not None and point[1] else []
    return "" if not words or words == ["idle"] else ", ".join(words)


def chart_rows(
    panel: FleetPanel, charts: tuple[Chart, ...], gpu: GpuView, width: int, heights: tuple[int, ...]
) -> list[Content]:
    """The GPU's charts, each `heights[i]` rows; a field it lacks is a muted line and blanks."""
    lines: list[Content] = []
    for chart, height in zip(charts, heights, strict=False):
        if height <= 0:
            continue
        why = gpu.errors.get(chart.name)
        if why is not None:  # this tick's read failed: say so where its chart is
            lines.append(Content.styled(f"{chart.name}: {why}", "$text-warning"))
            lines += [Content("")] * (height - 1)
            continue
        if chart.name not in gpu.series:
            lines.append(Content.styled(f"{chart.label:<7}not reported", "$text-disabled"))
            lines += [Content("")] * (height - 1)
            continue
        frame = panel.frame(width, height)
        plot = gpu_plot(chart, panel.server, gpu, frame)
        lines += chart_lines(plot, width, height, panel.marks(frame), panel.muted)
    return lines


class GpuPanel(FleetPanel):
    DEFAULT_CSS = """
    GpuPanel {
        border: round $primary-muted;
        border-title-color: $text;
        border-subtitle-color: $text-muted;
        border-subtitle-align: right;
        padding: 0 1;
        &.-warning {
            border: round $warning;
        }
        &.-critical, &.-lost {
            border: round $error;
        }
    }
    """

    def __init__(self, server: ServerView, view: MonitorView, index: int) -> None:
        super().__init__(server, view)
        self.index = index

    def title(self) -> str:
        info = gpu_info(self.server, self.index)
        title = f"GPU {self.index} · {info.name}" if info else f"GPU {self.index}"
        gpu = self.server.gpus.get(self.index)
        if gpu is not None and gpu.state == "ok" and (held := throttle_text(gpu)):
            title += f" · {held}"
        if gpu is not None and gpu.state == "error":
            title += " · ⚠ error reading this GPU"
        elif gpu is not None and gpu.errors:
            title += f" · ⚠ {counted(len(gpu.errors), 'field')} unread (d)"
        return title

    def subtitle(self) -> str | None:
        width = self.content_size.width
        chars = width - MARGIN
        if chars < 12:
            return window_label(self.view.window)
        return time_axis(chars, self.view.window) + " "

    def sync(self, version: object) -> bool:
        if not super().sync(version):
            return False
        gpu = self.server.gpus.get(self.index)
        self.set_class(gpu is not None and gpu.state == "lost", "-lost")
        level = "ok" if gpu is None or self.muted else danger.gpu_level(gpu.last)
        for severity in ("warning", "critical"):  # its border, by its worst reading
            self.set_class(level == severity, f"-{severity}")
        return True

    def heights(self) -> tuple[int, ...]:
        layout = self.view.layout
        if layout is not None and len(layout.chart_rows) == len(self.view.gpu_charts):
            return layout.chart_rows
        return split(max(self.content_size.height, 1), len(self.view.gpu_charts))

    def charts_now(self) -> bool:
        return True

    def lines(self, width: int) -> list[Content]:
        gpu = self.server.gpus.get(self.index)
        if gpu is None:
            return [Content.styled("no samples yet", "$text-muted")]
        if gpu.state == "lost":
            return [Content.styled("✕ lost: stopped answering NVML", "bold $text-error")]
        heights = self.heights()
        lines = chart_rows(self, self.view.gpu_charts, gpu, width, heights)
        if gpu.state == "error":  # why first, in the rows the charts would have taken
            why = [
                Content.styled(f"{name}: {text}", "$text-warning")
                for name, text in gpu.errors.items()
            ]
            lines = [Content.styled("⚠ error reading this GPU", "bold $text-warning"), *why, *lines]
        return lines[: sum(heights)]
