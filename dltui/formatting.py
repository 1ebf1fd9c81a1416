"""Human-readable numbers with units, shared by the CLI and the TUI."""

from __future__ import annotations

_BINARY = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_DECIMAL = ("", "k", "M", "G", "T", "P")


def fmt_bytes(value: float | None) -> str:
    """Sizes in powers of 1024, as memory is sold and reported."""
    if value is None:
        return "–"
    for unit in _BINARY:
        if abs(value) < 1024 or unit == _BINARY[-1]:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def fmt_rate(value: float | None) -> str:
    """Throughput in powers of 1000 (B/s, kB/s, MB/s, GB/s), as links are rated."""
    if value is None:
        return "–"
    for prefix in _DECIMAL:
        if abs(value) < 1000 or prefix == _DECIMAL[-1]:
            return f"{value:.0f} {prefix}B/s" if not prefix else f"{value:.1f} {prefix}B/s"
        value /= 1000
    raise AssertionError("unreachable")


def fmt_value(value: float | None, unit: str) -> str:
    """Any telemetry value with the unit its field declares."""
    if value is None:
        return "–"
    if unit == "B":
        return fmt_bytes(value)
    if unit == "B/s":
        return fmt_rate(value)
    if unit == "%":
        return f"{value:.0f}%"
    if unit == "":
        return f"{value:g}" if value == int(value) else f"{value:.2f}"
    return f"{value:.0f} {unit}"


def fmt_duration(seconds: float | None) -> str:
    """Microseconds under a millisecond, milliseconds under a second, else s, min or h."""
    if seconds is None:
        return "–"
    if abs(seconds) < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if abs(seconds) < 1:
        return f"{seconds * 1000:.1f} ms"
    if abs(seconds) < 120:
        return f"{seconds:.1f} s"
    if abs(seconds) < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
