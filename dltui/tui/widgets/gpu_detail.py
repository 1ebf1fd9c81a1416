"""One GPU in full, for the detail screen: tall charts with the benchmark phases behind them,
why the clocks are down in sentences, and the processes on it."""

from __future__ import annotations

from textual.content import Content

from dltui.fleet.state import ServerView
from dltui.formatting import fmt_bytes
from dltui.protocol.fields import throttle_reasons_in
from dltui.tui.charts import gpu_charts, gpu_info, present
from dltui.tui.widgets.gpu_panel import GpuPanel, chart_rows

CHART_ROWS = 3
"""Rows of each chart on the detail screen (it scrolls)."""

THROTTLE_EXPLAINED = {
    "idle": "nothing runs, so the clocks rest (normal when idle)",
    "application clock setting": "held at application clocks someone set (nvidia-smi -ac)",
    "software power cap": "drawing its power limit: the driver lowers the clocks to stay under "
    "it (raise the limit, or expect this under full load)",
    "hardware slowdown": "the board asked for a hard slowdown (power brake or overheating): "
    "clocks cut by half or more",
    "sync boost": "held to the slowest GPU of its sync-boost group",
    "software thermal slowdown": "hotter than its target: the driver lowers the clocks (check "
    "the airflow)",
    "hardware thermal slowdown": "too hot: the hardware cuts the clocks hard (check cooling now)",
    "hardware power brake": "the power supply asserted the power brake: clocks cut hard",
    "display clock setting": "the clocks follow a display clock setting",
}


def throttle_lines(mask: float | None) -> list[Content]:
    if mask is None:
        return [Content.styled("clocks: no throttle reasons reported", "$text-muted")]
    words = throttle_reasons_in(int(mask))
    if not words:
        return [Content.styled("clocks: not held down", "$text-success")]
    lines = [Content.styled("clocks held down because:", "$text-muted")]
    for word in words:
        style = "$text-muted" if word == "idle" else "$text-warning"
        lines.append(Content.assemble("  ", (word, f"bold {style}"), " — ",
                                      THROTTLE_EXPLAINED.get(word, "")))  # fmt: skip
    return lines


def process_lines(server: ServerView, index: int) -> list[Content]:
    found = server.processes.get(index)
    if found is None:
        return [Content.styled("processes: none reported yet (every 2 s)", "$text-muted")]
    if not found:
        return [Content.styled("processes: no compute process on this GPU", "$text-muted")]
    lines = [Content.styled(f"processes ({len(found)}):", "$text-muted")]
    for process in sorted(found, key=lambda p: -(p.memory or 0)):
        memory = fmt_bytes(process.memory) if process.memory is not None else "–"
        name = process.name or "?"
        lines.append(Content.assemble(f"  {process.pid:>8} ", (f"{name[:30]:<30}", "bold"),
                                      f" {memory:>10}"))  # fmt: skip
    return lines


class GpuDetail(GpuPanel):
    """A GPU panel with every chart CHART_ROWS tall, throttle reasons explained, its processes
    and the fields whose read failed, with NVML's reason."""

    DEFAULT_CSS = """
    GpuDetail {
        width: 1fr;
        min-width: 50;
        height: auto;
    }
    """

    def title(self) -> str:
        info = gpu_info(self.server, self.index)
        title = super().title()
        if info is None:
            return title
        if info.pcie_gen:
            title += f" · PCIe gen {info.pcie_gen} ×{info.pcie_width}"
            if info.pcie_gen_max and (info.pcie_gen, info.pcie_width) != (
                info.pcie_gen_max,
                info.pcie_width_max,
            ):
                title += f" (of gen {info.pcie_gen_max} ×{info.pcie_width_max})"
        if info.nvlink_links:
            title += f" · NVLink {info.nvlink_links} links"
        return title

    def lines(self, width: int) -> list[Content]:
        gpu = self.server.gpus.get(self.index)
        if gpu is None or gpu.state == "lost":
            return super().lines(width)
        charts = present(gpu_charts(), [self.server])
        heights = (CHART_ROWS,) * len(charts)
        lines = chart_rows(self, charts, gpu, width, heights)
        lines += throttle_lines(gpu.last("throttle"))
        lines += process_lines(self.server, self.index)
        lines += [Content.styled(f"{name}: {why}", "dim") for name, why in gpu.errors.items()]
        return lines
