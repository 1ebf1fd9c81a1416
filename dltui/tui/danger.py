"""How alarming a GPU's reading is, as btop colours its meters: temperature, power against its
limit, ECC and row-remapping errors, and why the clocks are held down. One place for the
thresholds; the GPU table and panels colour by them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from dltui.protocol.fields import throttle_reasons_in

Level = Literal["ok", "warning", "critical"]
LEVELS: tuple[Level, ...] = ("ok", "warning", "critical")
STYLES: dict[Level, str] = {"ok": "", "warning": "bold $text-warning",
                            "critical": "bold $text-error"}  # fmt: skip

TEMP_WARNING_C = 83.0
"""Where data-centre GPUs near their slowdown temperature (H100/H200: slowdown near 87-90 °C)."""
TEMP_CRITICAL_C = 90.0
POWER_WARNING = 0.98
"""Of the power limit: a GPU at its cap runs its clocks down to stay there."""
ERRORS_CRITICAL = ("ecc_uncorrected", "retired_dbe", "remapped_uncorrectable", "remap_failed")
"""Counts where any at all means memory the GPU could not correct."""
ERRORS_WARNING = ("retired_pending", "remap_pending")
"""Flags that ask for a reset to finish retiring or remapping memory."""
THROTTLE_CRITICAL = {"hardware slowdown", "hardware thermal slowdown", "hardware power brake"}
THROTTLE_WARNING = {"software thermal slowdown", "software power cap"}

Latest = Callable[[str], float | None]
"""A GPU's latest value of a field, None where it has none."""


def temperature(latest: Latest) -> Level:
    value = latest("temp")
    if value is None:
        return "ok"
    return (
        "critical" if value >= TEMP_CRITICAL_C else "warning" if value >= TEMP_WARNING_C else "ok"
    )


def power(latest: Latest) -> Level:
    value, limit = latest("power"), latest("power_limit")
    return "warning" if value is not None and limit and value >= POWER_WARNING * limit else "ok"


def memory_errors(latest: Latest) -> Level:
    if any((latest(name) or 0) > 0 for name in ERRORS_CRITICAL):
        return "critical"
    return "warning" if any((latest(name) or 0) > 0 for name in ERRORS_WARNING) else "ok"


def throttle(latest: Latest) -> Level:
    words = set(throttle_reasons_in(int(latest("throttle") or 0)))
    if words & THROTTLE_CRITICAL:
        return "critical"
    return "warning" if words & THROTTLE_WARNING else "ok"


def worst(*levels: Level) -> Level:
    return max(levels, key=LEVELS.index, default="ok")


def gpu_level(latest: Latest) -> Level:
    """The worst of a GPU's readings."""
    return worst(temperature(latest), power(latest), memory_errors(latest), throttle(latest))
