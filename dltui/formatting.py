"""Numbers written for people, with their units: sizes, memory, rates, links, ratios, counts,
durations, and a launch's work in words. Results and wiring as text are result_text.py's."""

from __future__ import annotations

import math
from collections.abc import Sequence

from dltui.plans import sizing
from dltui.protocol.bench_plans import KernelPlan, ModelPlan, Plan
from dltui.protocol.inventory import Inventory

_BINARY = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_DECIMAL = ("", "k", "M", "G", "T", "P")
GIB = 2**30
GB = 1e9
"""Bytes in a GB: link rates are decimal, as links are rated."""
NONE = "–"
"""What a figure that is not there reads as."""


def fmt_bytes(value: float | None) -> str:
    """Sizes in powers of 1024 (files, bytes moved), one decimal: '1.5 MiB'."""
    if value is None:
        return NONE
    for unit in _BINARY:
        if abs(value) < 1024 or unit == _BINARY[-1]:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def exact_bytes(nbytes: int) -> str:
    """A size as it was set, a whole number of GiB or MiB where it is one: '16 MiB', '1 GiB',
    '4096 B' (a case's name, a limit)."""
    for unit, size in (("GiB", GIB), ("MiB", 2**20)):
        if nbytes >= size and nbytes % size == 0:
            return f"{nbytes // size} {unit}"
    return f"{nbytes} B"


def gib_figure(value: float | None) -> str:
    """Memory in GiB with one decimal and no unit, for a column whose heading names it: '0.6'."""
    return NONE if value is None else f"{value / GIB:.1f}"


def fmt_memory(value: float | None) -> str:
    """Memory, always in GiB with one decimal, as GPUs and hosts are sold: '0.6 GiB'."""
    return NONE if value is None else f"{gib_figure(value)} GiB"


def fmt_memory_of(used: float | None, total: float | None) -> str:
    """'0.6/140.0 GiB': memory used of the total, one unit for both."""
    if used is None or not total:
        return fmt_memory(used)
    return f"{gib_figure(used)}/{gib_figure(total)} GiB"


def fmt_rate(value: float | None) -> str:
    """Throughput in powers of 1000 (B/s, kB/s, MB/s, GB/s), as links are rated."""
    if value is None:
        return NONE
    for prefix in _DECIMAL:
        if abs(value) < 1000 or prefix == _DECIMAL[-1]:
            return f"{value:.0f} {prefix}B/s" if not prefix else f"{value:.1f} {prefix}B/s"
        value /= 1000
    raise AssertionError("unreachable")


def gbps_figure(value: float | None) -> str:
    """A rate in GB/s in at most four cells and no unit, for a column whose heading names it:
    '0.0', '5.0', '63', '450'."""
    if value is None:
        return NONE
    gbps = value / GB
    return f"{gbps:.1f}" if gbps < 9.95 else f"{gbps:.0f}"


def fmt_count(value: float | None) -> str:
    """A count with its thousands grouped: '12,345'."""
    return NONE if value is None else f"{value:,.0f}"


def counted(count: int, noun: str, plural: str = "") -> str:
    """A count of something: '1 result', '12,345 results', '2 processes' (`plural` where an
    added s is wrong)."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def fmt_iterations(count: int) -> str:
    """Iterations a figure was timed over: '1,200 it' (a bare '×1,200' reads as a ratio)."""
    return f"{count:,} it"


def significant(value: float, digits: int = 3) -> str:
    """`value` to `digits` significant figures, thousands grouped, no exponent: 18,600; 1.86;
    0.00123."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    magnitude = math.floor(math.log10(abs(value)))
    places = digits - 1 - magnitude  # negative: round to tens, hundreds...
    return f"{round(value, places):,.{max(places, 0)}f}"


def plain_figure(value: float) -> str:
    """Three significant figures without trailing zeros, or the whole number from 100 up, for
    a figure in a sentence: '0.1', '25', '37.7', '4,843'."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    text = significant(value)
    return text.rstrip("0").rstrip(".") if "." in text else text


def fmt_ms(seconds: float) -> str:
    """A step's time, in milliseconds whatever its length: '0.25 ms', '37.7 ms', '4,843 ms'."""
    return f"{plain_figure(seconds * 1e3)} ms"


def fmt_gbps(gbps: float) -> str:
    """A link's bandwidth, in GB/s whatever its size, so links read side by side: '0.0117
    GB/s', '25 GB/s', '1,600 GB/s'."""
    return f"{plain_figure(gbps)} GB/s"


def fmt_gbit(gbit: float) -> str:
    """A network's line rate in Gbit/s, as NICs are sold: '0.1 Gbit/s', '400 Gbit/s'."""
    return f"{plain_figure(gbit)} Gbit/s"


def aligned(value: float | None, whole: int = 4, places: int = 4) -> str:
    """`value` to 4 significant figures (at most `places` decimals) in a fixed-width cell whose
    decimal points line up down a column: ' 740.2   ', '   0.2723'; blank where there is none."""
    if value is None:
        return " " * (whole + 1 + places)
    text = significant(value, 4)
    if len(text.partition(".")[2]) > places:
        text = f"{value:,.{places}f}"
    digits, point, fraction = text.partition(".")
    return digits.rjust(whole) + (point + fraction).ljust(places + 1)


def fmt_ratio(value: float | None) -> str:
    """A ratio to 3 significant figures (2 under 1): '1.86×', '18,600×', '0.0012×'."""
    if value is None:
        return ""
    return f"{significant(value, 3 if abs(value) >= 1 else 2)}×"


def fmt_value(value: float | None, unit: str) -> str:
    """Any telemetry value with the unit its field declares (protocol/fields.py), one space
    between number and unit: '612 W', '30 °C', '80.2 GiB', '5.0 GB/s', '90%'."""
    if value is None or math.isnan(value):
        return NONE
    if unit == "B":
        return fmt_memory(value)
    if unit == "B/s":
        return fmt_rate(value)
    if unit == "%":
        return f"{value:.0f}%"
    if unit == "":
        return f"{value:,.0f}" if value == int(value) else f"{value:.2f}"
    return f"{value:.0f} {unit}"


SHORT = 8
"""The widest a short value gets: '1980 MHz', '70.1 GiB', '5.0 GB/s' (a chart's labels)."""


def fmt_short(value: float | None, unit: str) -> str:
    """`value` in its field's unit in at most SHORT cells: a chart's axis and latest value.
    Memory in GiB (one decimal under 100), rates with decimal prefixes."""
    if value is None or math.isnan(value):
        return NONE
    if unit == "B":
        gib = value / GIB
        return f"{gib:.1f} GiB" if abs(gib) < 99.95 else f"{gib:.0f} GiB"
    if unit == "B/s":
        for prefix in _DECIMAL:
            if abs(value) < 999.5 or prefix == _DECIMAL[-1]:
                if abs(value) >= 9.95 or not prefix or value == int(value):
                    return f"{value:.0f} {prefix}B/s"
                return f"{value:.1f} {prefix}B/s"
            value /= 1000
    if unit == "%":
        return f"{value:.0f}%"
    if unit == "":
        return f"{value:.3g}"
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


def rough_duration(seconds: float) -> str:
    """'< 1 s', '40 s', '5 min', '2.1 h': seconds under 90 s, minutes under 90 min, else
    hours."""
    if seconds < 1:
        return "< 1 s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def time_left(seconds: float) -> str:
    """'~3 min left': what a run still needs at the pace so far."""
    return f"~{rough_duration(seconds)} left"


def estimated_duration(seconds: float) -> str:
    """'about 40 s', 'about 5 min', 'about 2 h': an estimate, its seconds to the nearest ten."""
    if seconds < 90:
        return f"about {max(round(seconds / 10) * 10, 10):.0f} s"
    return f"about {rough_duration(seconds)}"


def describe_work(plans: Sequence[Plan], inventory: Inventory) -> str:
    """'60 cases, about 5 min', '3 training runs, about 12 min', or both joined: what a server
    runs of a launch, one plan after the other."""
    kernels = [plan for plan in plans if isinstance(plan, KernelPlan)]
    cases = sum(sizing.kernel_cases(plan, inventory) for plan in kernels)
    runs = sum(sizing.model_runs(plan) for plan in plans if isinstance(plan, ModelPlan))
    what = [counted(cases, "case")] * bool(kernels)
    what += [counted(runs, "training run")] * (len(kernels) < len(plans))
    seconds = sum(sizing.estimate_s(plan, inventory) for plan in plans)
    return f"{' + '.join(what)}, {estimated_duration(seconds)}"
