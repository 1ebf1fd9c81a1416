"""Values in at most seven cells, with their unit: a chart's axis labels and a table's cells."""

from __future__ import annotations

import math

SHORT = 7
"""The widest a short value gets: '1980MHz', '70.1GiB', '5.0GB/s'."""

_BINARY = ("B", "KiB", "MiB", "GiB", "TiB")
_DECIMAL = ("", "k", "M", "G", "T")


def _scaled(value: float, base: float, prefixes: tuple[str, ...], suffix: str) -> str:
    for prefix in prefixes:
        if abs(value) < base or prefix == prefixes[-1]:
            if abs(value) >= 9.95 or prefix in ("", "B") or value == int(value):
                return f"{value:.0f}{prefix}{suffix}"
            return f"{value:.1f}{prefix}{suffix}"
        value /= base
    raise AssertionError("unreachable")


def short(value: float | None, unit: str) -> str:
    """`value` in its field's unit, in at most SHORT cells; '–' when there is none."""
    if value is None or math.isnan(value):
        return "–"
    if unit == "B":
        return _scaled(value, 1024, _BINARY, "")
    if unit == "B/s":
        return _scaled(value, 1000, _DECIMAL, "B/s")
    if unit == "%":
        return f"{value:.0f}%"
    if unit == "°C":
        return f"{value:.0f}°C"
    if unit == "":
        return f"{value:.3g}"
    return f"{value:.0f}{unit}"


def nice_top(observed: float, floor: float = 0.0) -> float:
    """A round full scale at or above both: 1, 2, 2.5 or 5 times a power of ten."""
    top = max(observed, floor)
    if top <= 0 or math.isnan(top):
        return 1.0
    power = 10 ** math.floor(math.log10(top))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        if top <= step * power * (1 + 1e-9):
            return step * power
    return 10 * power
