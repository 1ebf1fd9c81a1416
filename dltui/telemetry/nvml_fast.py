"""The cheap reads of one GPU, prepared once when it opens: a tick only calls them.

Ten times a second a tick reads up to six numbers per GPU. pynvml's function for each read
allocates its answer, looks its C function up and checks the return code on every call, and
its structures hand each field out through a Python `__getattribute__`; with the caches gone
cold in the 100 ms between ticks, that Python costs a VM about as much as the reads
(measured: docs/results/telemetry-h200.md, "Where a tick's CPU goes"). So each read here holds
its C function, found once, and its answer, allocated once: the fast thread is its only
caller. Where the NVML module is not pynvml (the fakes in tests), a read calls the module's
function of the same name, as the gateway's other reads do.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dltui.telemetry.nvml_reads import FAST_READS, FastRead

Take = Callable[[], dict[str, float]]


@dataclass
class PreparedRead:
    """One group's read for one GPU, and the values it last gave."""

    group: str
    fields: tuple[str, ...]
    ways: list[tuple[str, Take]]
    """(NVML function, the read through it), best first: a way NVML does not support is
    dropped for the next."""
    held: dict[str, float] | None = None
    """The values of the last read that answered, carried by the ticks the schedule holds it
    back (schedule.py); None after one that failed."""


def prepare(nvml: Any, handle: Any) -> list[PreparedRead]:
    """The fast reads of the GPU at `handle`: each group that some function of this NVML
    module can answer."""
    reads = []
    for group, read in FAST_READS.items():
        args = tuple(getattr(nvml, constant) for constant in read.constants)
        ways = [(name, take) for name in read.functions
                if (take := _way(nvml, name, handle, args, read)) is not None]  # fmt: skip
        if ways:
            reads.append(PreparedRead(group, read.fields, ways))
    return reads


def _way(nvml: Any, name: str, handle: Any, args: tuple[Any, ...], read: FastRead) -> Take | None:
    """The read through the function `name`; None where this NVML lacks it."""
    fields, values = read.fields, read.values
    find = getattr(nvml, "_nvmlGetFunctionPointer", None)
    if find is None:  # not pynvml
        function = getattr(nvml, name, None)
        if function is None:
            return None
        return lambda: dict(zip(fields, values(function(handle, *args)), strict=True))
    try:
        c_function = find(name)
    except nvml.NVMLError:  # FunctionNotFound: the driver's library lacks it
        return None
    answer = read.answer()
    where = (*args, ctypes.byref(answer))
    error = nvml.NVMLError  # pynvml's NVMLError(code) is the subclass for that code
    number = not isinstance(answer, ctypes.Structure)

    def take() -> dict[str, float]:
        code = c_function(handle, *where)
        if code:
            raise error(code)
        return dict(zip(fields, values(answer.value if number else answer), strict=True))

    return take
