"""The host under the GPUs: a starved data loader shows here first (CPU, disk, network)."""

from __future__ import annotations

from textual.content import Content

from dltui.formatting import fmt_rate, fmt_value
from dltui.tui.widgets.panel import LABEL_WIDTH, FleetPanel, Meter, fmt_used, meter_lines
from dltui.tui.widgets.spark import level_char


def core_style(percent: float) -> str:
    if percent >= 90:
        return "$text-error"
    if percent >= 60:
        return "$text-warning"
    return "$text-success"


def core_bars(per_core: list[float], width: int) -> list[Content]:
    """One block per core, wrapped to the width: a single pegged core (a Python data loader)
    stands out where the all-core average hides it."""
    width = max(width, 1)
    lines = []
    for start in range(0, len(per_core), width):
        chunk = per_core[start : start + width]
        lines.append(Content.assemble(*((level_char(p / 100), core_style(p)) for p in chunk)))
    return lines


def pair(label: str, first: tuple[str, float | None], second: tuple[str, float | None]) -> Content:
    """A label and two labelled rates on one line: net ↓/↑, disk r/w."""
    parts: list[str | tuple[str, str]] = [(label.ljust(LABEL_WIDTH), "$text-muted")]
    for arrow, value in (first, second):
        parts += [f" {arrow} ", (fmt_rate(value).rjust(10), "bold")]
    return Content.assemble(*parts)


class HostPanel(FleetPanel):
    DEFAULT_CSS = """
    HostPanel {
        border: round $primary-muted;
        border-title-color: $text-muted;
        padding: 0 1;
    }
    """

    def title(self) -> str:
        inventory = self.server.inventory
        if inventory is None:
            return "host"
        return f"host · {inventory.cpu_count} CPUs · {inventory.memory_total / 2**30:.0f} GiB"

    def lines(self, width: int) -> list[Content]:
        server = self.server
        host = server.host
        meters = []
        if "cpu" in host:
            cpu = server.host_last("cpu")
            meters.append(Meter("cpu", host["cpu"], fmt_value(cpu, "%"), "$success", limit=100))
        if "mem_used" in host:
            total = server.host_last("mem_total")
            used = fmt_used(server.host_last("mem_used"), total)
            meters.append(Meter("mem", host["mem_used"], used, "$secondary-lighten-3", limit=total))
        lines = meter_lines(meters, width)
        under_cpu = 1 if "cpu" in host else 0
        lines[under_cpu:under_cpu] = core_bars(server.cpu_per_core, width)
        if "load1" in host:
            loads = [server.host_last(name) for name in ("load1", "load5", "load15")]
            shown = " ".join("–" if load is None else f"{load:.2f}" for load in loads)
            lines.append(Content.assemble(("load".ljust(LABEL_WIDTH), "$text-muted"), " ", shown))
        if "net_rx" in host:
            rx, tx = server.host_last("net_rx"), server.host_last("net_tx")
            lines.append(pair("net", ("↓", rx), ("↑", tx)))
        if "disk_read" in host:
            read, write = server.host_last("disk_read"), server.host_last("disk_write")
            lines.append(pair("disk", ("r", read), ("w", write)))
        if not lines:
            lines.append(Content.styled("no samples yet", "$text-muted"))
        return lines
