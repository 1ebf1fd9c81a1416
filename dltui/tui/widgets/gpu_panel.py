"""One GPU: is it busy, what limits it (power, heat, PCIe, NVLink), and is it still there."""

from __future__ import annotations

from textual.content import Content

from dltui.fleet.state import GpuView, ServerView
from dltui.formatting import fmt_value
from dltui.protocol.fields import GPU_FIELDS, throttle_words
from dltui.protocol.messages import GpuInfo
from dltui.tui.widgets.panel import FleetPanel, Meter, fmt_used, meter_lines

RATE_FLOOR = 1e8  # B/s: below 100 MB/s a link is idle for deep learning; do not magnify noise
TEMP_FLOOR = 100.0  # °C: scale temperatures against where GPUs slow down, not against themselves

# (field, label, colour, fixed full scale, floor) for the plain lines; memory and power
# are built by hand because their value shows the limit too.
PLAIN_LINES = (
    ("temp", "temp", "$error", None, TEMP_FLOOR),
    ("clock_sm", "sm clk", "#b48ead", None, 0.0),
    ("pcie_tx", "pci tx", "$primary-lighten-2", None, RATE_FLOOR),
    ("pcie_rx", "pci rx", "$primary-lighten-2", None, RATE_FLOOR),
    ("nvlink_tx", "nvl tx", "#88c0d0", None, RATE_FLOOR),
    ("nvlink_rx", "nvl rx", "#88c0d0", None, RATE_FLOOR),
    ("tensor_active", "tensor", "$success-lighten-2", 100.0, 0.0),
)


def meters(gpu: GpuView, memory_total: float | None) -> list[Meter]:
    """The lines this GPU supports: a field it never reported is not shown."""
    series = gpu.series
    found = []
    if "util_gpu" in series:
        util = fmt_value(gpu.last("util_gpu"), "%")
        found.append(Meter("util", series["util_gpu"], util, "$success", limit=100.0))
    if "mem_used" in series:
        total = gpu.last("mem_total") or memory_total
        used = fmt_used(gpu.last("mem_used"), total)
        found.append(Meter("mem", series["mem_used"], used, "$secondary-lighten-3", limit=total))
    if "power" in series:
        power, limit = gpu.last("power"), gpu.last("power_limit")
        shown = f"{power:.0f}/{limit:.0f} W" if power is not None and limit else "–"
        if power is not None and not limit:
            shown = fmt_value(power, "W")
        found.append(Meter("power", series["power"], shown, "$warning", limit=limit))
    for name, label, colour, limit, floor in PLAIN_LINES:
        if name in series:
            value = fmt_value(gpu.last(name), GPU_FIELDS[name].unit)
            found.append(Meter(label, series[name], value, colour, limit=limit, floor=floor))
    return found


def throttle_line(gpu: GpuView) -> Content | None:
    """Why the clocks are down, in words; 'idle' alone is normal and not worth a line."""
    mask = gpu.last("throttle")
    words = throttle_words(int(mask)) if mask else []
    if not words or words == ["idle"]:
        return None
    return Content.assemble(("throttle ", "$text-muted"), (", ".join(words), "$text-warning"))


class GpuPanel(FleetPanel):
    DEFAULT_CSS = """
    GpuPanel {
        border: round $primary-muted;
        border-title-color: $text;
        padding: 0 1;
        &.-lost {
            border: round $error;
        }
    }
    """

    def __init__(self, server: ServerView, index: int) -> None:
        super().__init__(server)
        self.index = index

    def _info(self) -> GpuInfo | None:
        gpus = self.server.inventory.gpus if self.server.inventory else []
        return next((gpu for gpu in gpus if gpu.index == self.index), None)

    def title(self) -> str:
        info = self._info()
        return f"GPU {self.index} · {info.name}" if info else f"GPU {self.index}"

    def sync(self, version: int) -> bool:
        if not super().sync(version):
            return False
        gpu = self.server.gpus.get(self.index)
        self.set_class(gpu is not None and gpu.state == "lost", "-lost")
        return True

    def lines(self, width: int) -> list[Content]:
        gpu = self.server.gpus.get(self.index)
        if gpu is None:
            return [Content.styled("no samples yet", "$text-muted")]
        lines = []
        if gpu.state == "lost":
            lost = "✕ lost: stopped answering NVML"
            lines.append(Content.styled(lost, "bold $text-error"))
        else:
            if gpu.state == "error":
                lines.append(Content.styled("⚠ error reading this GPU", "bold $text-warning"))
            info = self._info()
            found = meters(gpu, info.memory_total if info else None)
            lines += meter_lines(found, width, self.spans(), self.events())
            throttle = throttle_line(gpu)
            if throttle is not None:
                lines.append(throttle)
        lines += [Content.styled(f"{name}: {why}", "dim") for name, why in gpu.errors.items()]
        return lines
