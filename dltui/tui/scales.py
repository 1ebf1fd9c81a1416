"""The full scale of each chart: the field's physical range where it has one (its FieldSpec's
chart top, in protocol/fields.py), worked out for a device here.

A clock is drawn against the GPU's maximum clock, power against its limit, memory against its
size, PCIe against what the link can carry and NVLink against its links' total, so an idle
GPU looks idle (345 MHz is a sixth of an H200's 1980 MHz, not a full bar). Fields without a
physical top (host network, disk) are scaled to a round number above what they reached.
"""

from __future__ import annotations

import math

from dltui.fleet.series import Series
from dltui.protocol.fields import FieldSpec
from dltui.protocol.inventory import GpuInfo

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


def physical_top(field: FieldSpec, series: dict[str, Series], info: GpuInfo | None) -> float | None:
    """The field's physical full scale for this device (its FieldSpec's chart top; 100 for a
    percentage), None where it has none (or the agent did not say it)."""
    top = field.chart.top if field.chart is not None else None
    if top is None and field.unit == "%":
        return 100.0
    if isinstance(top, (int, float)):
        return top
    if top == "pcie":
        return pcie_bytes(info) if info is not None else None
    if top == "nvlink":
        return nvlink_bytes(info) if info is not None else None
    if top is None:
        return None
    latest = _latest(series, top)
    if latest is None and top == "mem_total" and info is not None:
        return info.memory_total
    return latest


def full_scale(field: FieldSpec, physical: float | None, observed: float) -> float:
    """The chart's top: the physical one (or past it, if the field ever reads higher), else a
    round number above what was seen, never below the field's floor."""
    if physical:
        return max(physical, observed)
    return nice_top(observed, field.chart.floor if field.chart is not None else 0.0)


def nice_top(observed: float, floor: float = 0.0) -> float:
    """A round full scale at or above both: 1, 2, 2.5 or 5 times a power of ten."""
    top = max(observed, floor)
    if top <= 0 or math.isnan(top):
        return 1.0
    power = 10.0 ** math.floor(math.log10(top))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        if top <= step * power * (1 + 1e-9):
            return step * power
    return 10 * power
