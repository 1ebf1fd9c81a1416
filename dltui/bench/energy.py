"""The energy a kernel drew, read by the worker from the GPU's own counter while it runs.

A per-watt figure divides a rate by power. Power sampled at 10 Hz around a 59 ms case read 108 W
on an H200 near idle and gave 6.8 TFLOP/s/W (the GPU peaks near 1.4): the samples missed the
case. The energy counter covers the work itself, but on the H200 it moves only every 100 ms
(benchmarks/energy_counter.py), so two reads at arbitrary times are off by up to a step: 20%
over 0.25 s. The meter polls it on a thread of its own (a read takes ~3.5 ms) and keeps the
moments it moved: joules between the first and the last update, over the time between them,
are right to a read's length. NVML is reached through the one gateway.
"""

from __future__ import annotations

import threading
import time

from dltui.telemetry.nvml import NvmlGateway


class GpuEnergyMeter:
    def __init__(self, gateway: NvmlGateway, index: int) -> None:
        self._gateway = gateway
        self._index = index
        self._updates: list[tuple[float, float]] = []
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._updates = []
        self._stopping.clear()
        self._thread = threading.Thread(target=self._poll, name="energy meter", daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        last: float | None = None
        while not self._stopping.is_set():
            joules = self._gateway.energy_joules(self._index)
            if joules is None:
                return
            if last is not None and joules != last:
                self._updates.append((time.perf_counter(), joules))
            last = joules

    def stop(self) -> tuple[float, float] | None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
        if len(self._updates) < 2:
            return None
        (t0, e0), (t1, e1) = self._updates[0], self._updates[-1]
        return e1 - e0, t1 - t0


def open_meter(uuid: str) -> GpuEnergyMeter | None:
    """A meter on the GPU with this UUID (the only GPU, where the framework gives none), or
    None where NVML cannot read its energy."""
    gateway = NvmlGateway()
    gateway.open()
    index = gateway.index_of(uuid)
    if index is None and gateway.count == 1:
        index = 0
    if index is None or gateway.energy_joules(index) is None:
        gateway.close()
        return None
    return GpuEnergyMeter(gateway, index)
