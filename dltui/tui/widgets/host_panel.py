"""The host under the GPUs: a starved data loader shows here first (CPU, disk, network).

One line in compact mode (a bar of all cores, memory, load, network, disk, as much as fits);
in panels mode a CPU chart, one block per core under it and that line.
"""

from __future__ import annotations

from textual.content import Content

from dltui.fleet.state import ServerView
from dltui.formatting import fmt_memory, fmt_memory_of, fmt_short
from dltui.tui.charts import host_charts, total_plot
from dltui.tui.graph import MUTED, chart_lines
from dltui.tui.layout import CORE_LABEL, core_rows
from dltui.tui.spark import hbar, level_char
from dltui.tui.widgets.panel import FleetPanel


def core_style(percent: float) -> str:
    if percent >= 90:
        return "$text-error"
    if percent >= 60:
        return "$text-warning"
    return "$text-success"


def core_bars(per_core: list[float], width: int) -> list[Content]:
    """One block per core, wrapped to the width: a single pegged core (a Python data loader)
    stands out where the all-core average hides it."""
    label: tuple[str, str] = (CORE_LABEL, "$text-muted")
    width = max(width - len(CORE_LABEL), 1)
    lines = []
    for start in range(0, len(per_core), width):
        chunk = per_core[start : start + width]
        blocks = ((level_char(p / 100), core_style(p)) for p in chunk)
        lines.append(Content.assemble(label, *blocks))
        label = (" " * len(CORE_LABEL), "")
    return lines


def latest(server: ServerView, name: str) -> float | None:
    """The host field's newest value before any gap: what an offline server showed last."""
    series = server.host.get(name)
    point = series.latest() if series is not None else None
    return point[1] if point is not None else None


def host_figures(server: ServerView, muted: bool) -> list[Content]:
    """Memory, load, network and disk as short labelled figures, most telling first."""
    value = "$text-muted" if muted else "bold"
    found = []

    def last(name: str) -> float | None:
        return latest(server, name)

    if "mem_used" in server.host:
        total = last("mem_total")
        used = fmt_memory_of(last("mem_used"), total)
        found.append(Content.assemble(("mem ", "$text-muted"), (used, value)))
    if "load1" in server.host:
        found.append(
            Content.assemble(("load ", "$text-muted"), (f"{last('load1') or 0:.2f}", value))
        )
    if "net_rx" in server.host:
        found.append(
            Content.assemble(
                ("net ↓ ", "$text-muted"),
                (fmt_short(last("net_rx"), "B/s"), value),
                (" ↑ ", "$text-muted"),
                (fmt_short(last("net_tx"), "B/s"), value),
            )
        )
    if "disk_read" in server.host:
        found.append(
            Content.assemble(
                ("disk r ", "$text-muted"),
                (fmt_short(last("disk_read"), "B/s"), value),
                (" w ", "$text-muted"),
                (fmt_short(last("disk_write"), "B/s"), value),
            )
        )
    return found


def fitted(parts: list[Content], width: int, gap: str = "  ") -> Content:
    """As many of `parts` as fit in `width`, in order."""
    line = Content("")
    for part in parts:
        joined = part if not line.plain else line + gap + part
        if len(joined.plain) > width:
            break
        line = joined
    return line


class HostPanel(FleetPanel):
    DEFAULT_CSS = """
    HostPanel {
        padding: 0 1;
    }
    """

    def title(self) -> str | None:
        inventory = self.server.inventory
        if not self.has_class("-boxed"):
            return None
        if inventory is None:
            return "host"
        return f"host · {inventory.cpu_count} CPUs · {fmt_memory(inventory.memory_total)}"

    def charts_now(self) -> bool:
        return self.has_class("-boxed")

    def lines(self, width: int) -> list[Content]:
        server = self.server
        if "cpu" not in server.host:
            return [Content.styled("host: no samples yet", "$text-muted")]
        muted = self.muted
        cpu = latest(server, "cpu")
        if not self.has_class("-boxed"):
            bar_width = max(min(width // 6, 12), 3)
            head = Content.assemble(
                ("cpu ", "$text-muted"),
                (hbar((cpu or 0) / 100, bar_width), MUTED if muted else "$success"),
                (f" {fmt_short(cpu, '%'):>4}", "$text-muted" if muted else "bold"),
            )
            return [fitted([head, *host_figures(server, muted)], width)]
        cores = core_rows(len(server.cpu_per_core), width)
        chart_height = max((self.content_size.height or 4) - cores - 1, 1)
        frame = self.frame(width, chart_height)
        plot = total_plot(host_charts()[0], server, frame)
        lines = chart_lines(plot, width, chart_height, self.marks(frame), muted) if plot else []
        lines += core_bars(server.cpu_per_core, width)
        lines.append(fitted(host_figures(server, muted), width))
        return lines
