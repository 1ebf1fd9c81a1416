"""The full scale of each chart: the field's physical range where it has one.

A clock is drawn against the GPU's maximum clock, power against its limit, memory against its
size, PCIe against what the link can carry and NVLink against its links' total, so an idle
GPU looks idle (345 MHz is a sixth of an H200's 1980 MHz, not a full bar). Fields without a
physical top (host network, disk) are scaled to a round number above what they reached.
"""

from __future__ import annotations

from dltui.fleet.series import Series
from dltui.protocol.messages import GpuInfo
from dltui.tui.units import nice_top

PERCENT_FIELDS = frozenset(
    {"util_gpu", "util_mem", "tensor_active", "sm_active", "sm_occupancy", "dram_active", "cpu"}
)
CLOCK_FLOOR_MHZ = 2000.0
"""Where an agent does not report the maximum clock: no data-centre GPU boosts past ~2 GHz."""
TEMP_TOP_C = 100.0
"""GPUs slow themselves down below this: a fuller bar is closer to throttling."""
RATE_FLOOR = 1e8
"""B/s: below 100 MB/s a link is idle for deep learning; do not magnify the noise."""

PCIE_LANE_GBITS = {
    1: 2.0,
    2: 4.0,
    3: 8 * 128 / 130,
    4: 16 * 128 / 130,
    5: 32 * 128 / 130,
    6: 64 * 242 / 256,
}
"""Usable Gbit/s per lane and direction of each PCIe generation, after line coding (8b/10b up
to gen 2, 128b/130b from gen 3, FLIT from gen 6)."""
NVLINK_LINK_BYTES = 25e9
"""Bytes/s per link and direction for NVLink 2 to 4 (V100, A100, H100/H200)."""
NVLINK5_LINK_BYTES = 50e9
NVLINK5_NAMES = ("B100", "B200", "B300", "GB200", "GB300")


def pcie_bytes(info: GpuInfo) -> float | None:
    """What the link carries each way at the generation and width the GPU and slot allow (an
    idle GPU trains its link down, so the current generation would understate it)."""
    gen = info.pcie_gen_max or info.pcie_gen
    width = info.pcie_width_max or info.pcie_width
    if not gen or not width or gen not in PCIE_LANE_GBITS:
        return None
    return PCIE_LANE_GBITS[gen] * 1e9 / 8 * width


def nvlink_bytes(info: GpuInfo) -> float | None:
    """All the GPU's active links together, each way."""
    if not info.nvlink_links:
        return None
    per_link = (
        NVLINK5_LINK_BYTES if any(n in info.name for n in NVLINK5_NAMES) else NVLINK_LINK_BYTES
    )
    return info.nvlink_links * per_link


def _latest(series: dict[str, Series], name: str) -> float | None:
    found = series.get(name)
    point = found.latest() if found is not None else None
    return point[1] if point is not None else None


def physical_top(name: str, series: dict[str, Series], info: GpuInfo | None) -> float | None:
    """The field's physical full scale for this device, None where it has none (or the agent
    did not say it)."""
    if name in PERCENT_FIELDS:
        return 100.0
    if name == "mem_used":
        return _latest(series, "mem_total") or (info.memory_total if info else None)
    if name == "power":
        return _latest(series, "power_limit")
    if name == "clock_sm":
        return _latest(series, "clock_sm_max")
    if name in ("pcie_tx", "pcie_rx") and info is not None:
        return pcie_bytes(info)
    if name in ("nvlink_tx", "nvlink_rx") and info is not None:
        return nvlink_bytes(info)
    return None


FLOORS = {"clock_sm": CLOCK_FLOOR_MHZ, "temp": TEMP_TOP_C}


def full_scale(name: str, physical: float | None, observed: float) -> float:
    """The chart's top: the physical one (or past it, if the field ever reads higher), else a
    round number above what was seen, never below the field's floor."""
    if physical:
        return max(physical, observed)
    floor = FLOORS.get(name, RATE_FLOOR if name.endswith(("_tx", "_rx")) else 0.0)
    return nice_top(observed, floor)
