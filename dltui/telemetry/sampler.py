"""The sampling threads: a fast tick on a fixed schedule, and a slow reader beside it.

The fast thread ticks at the asked rate on a monotonic grid (tick k is due at start + k·period),
so the rate does not drift; when a tick overruns it runs the late tick at once and drops the
ones it missed rather than bursting to catch up. GPM and the blocking PCIe call run on a second
thread, and the fast tick merges the latest of their values, so a slow NVML call never delays a
sample. NVML never runs on the agent's event loop: `on_sample` is called from the fast thread.

A call that never returns is outlived: a watchdog thread finds a GPU read past its deadline,
marks that GPU hung (its samples say so) and starts a new fast or slow thread that skips it;
the stuck thread ends when its call returns (see nvml_watch).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
import time
from collections.abc import Callable

from dltui.protocol.messages import Event, GpuProcess, GpuSample, Inventory, MigSample, Sample
from dltui.telemetry.host import HostSampler
from dltui.telemetry.inventory import build_inventory
from dltui.telemetry.nvml import NvmlGateway
from dltui.telemetry.nvml_reads import GPM_MIN_INTERVAL, SLOW_INTERVALS
from dltui.telemetry.nvml_watch import CallAbandoned
from dltui.telemetry.processes import Owners
from dltui.telemetry.xid import watch_xid

log = logging.getLogger(__name__)

SLOW_MAX_AGE = 2.5 * max(SLOW_INTERVALS.values())
"""Seconds after which a slow value is dropped rather than shown as current."""

# A little over GPM's minimum, so scheduling jitter never brings two GPM samples closer than it.
_SLOW_MIN_INTERVAL = GPM_MIN_INTERVAL * 1.05

FAST_DEADLINE = 0.25
"""Seconds one GPU's fast read may take (it takes microseconds) before the GPU counts as hung."""
SLOW_DEADLINE = 2.0
"""The same for one slow read (the longest, the PCIe call, blocks about 20 ms)."""
WATCH_INTERVAL = 0.1
OPEN_DEADLINE = 30.0
"""Seconds NVML may take to start and list the GPUs (seconds per GPU without persistence mode)
before the agent goes on without them."""

SlowValues = dict[int, dict[str, tuple[float, float]]]
"""GPU index -> field -> (value, monotonic time it was read)."""


class Sampler:
    """Owns the NVML gateway and the host sampler, and hands each tick's `Sample` to a callback."""

    def __init__(
        self,
        rate_hz: float,
        on_sample: Callable[[Sample], None],
        gateway: NvmlGateway | None = None,
        *,
        host: HostSampler | None = None,
        open_deadline: float = OPEN_DEADLINE,
        on_event: Callable[[Event], None] | None = None,
    ) -> None:
        if not rate_hz > 0:
            raise ValueError(f"rate_hz must be positive, got {rate_hz}")
        self.rate_hz = rate_hz
        self.open_deadline = open_deadline
        self.period = 1.0 / rate_hz
        self._on_sample = on_sample
        self._gateway = gateway if gateway is not None else NvmlGateway()
        self._host = host if host is not None else HostSampler()
        self._inventory: Inventory | None = None
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._fast: threading.Thread | None = None
        self._slow_reader: threading.Thread | None = None
        self._abandoned: list[threading.Thread] = []
        """Threads replaced while stuck in NVML; they end when their call returns."""
        self._slow: SlowValues = {}
        self._processes: dict[int, list[GpuProcess]] = {}
        """Process lists read since the last tick: the next sample carries them, once."""
        self._mig: dict[int, list[MigSample]] = {}
        """MIG instances' readings since the last tick, carried the same way."""
        self._owners = Owners()
        self._on_event = on_event
        """Gets each XID, from a thread of its own."""
        self._slow_lock = threading.Lock()
        self._seq = 0
        self._last_error: dict[str, str] = {}

    @property
    def inventory(self) -> Inventory:
        """The machine's inventory, taken once (this opens NVML)."""
        if self._inventory is None:
            self._inventory = self._take_inventory()
        return self._inventory

    def _take_inventory(self) -> Inventory:
        # NVML can hang as it starts (a GPU fallen off the bus, a wedged driver): past the
        # deadline the agent goes on with no GPUs rather than never serving. The stuck gateway
        # is left as it is: closing NVML under a call still inside it could crash the process.
        taken: list[Inventory] = []
        failed: list[BaseException] = []

        def take() -> None:
            self._gateway.watch.watch_this_thread(self.open_deadline)
            try:
                taken.append(build_inventory(self._gateway))
            except BaseException as exc:  # raised again on the caller's thread
                failed.append(exc)

        opener = threading.Thread(target=take, name="dltui-nvml-open", daemon=True)
        opener.start()
        opener.join(self.open_deadline)
        if failed:
            raise failed[0]
        if taken:
            return taken[0]
        call = self._gateway.watch.last_call(opener) or "start"
        reason = (f"NVML {call} did not return within {self.open_deadline:g} s of the agent's "
                  "start: no GPU is sampled until the agent restarts")  # fmt: skip
        log.warning("%s", reason)
        self._gateway = NvmlGateway.unavailable(reason)
        return build_inventory(self._gateway)

    def start(self) -> None:
        if self._threads:
            raise RuntimeError("the sampler is already started")
        _ = self.inventory
        self._start_fast()
        if self._gateway.count:
            self._start_slow()
            self._start("dltui-sample-watch", self._run_watch).start()
            if (on_event := self._on_event) is not None:
                self._start("dltui-xid", lambda: watch_xid(self._gateway, on_event,
                                                           self._stopping)).start()  # fmt: skip

    def _start(self, name: str, target: Callable[[], None]) -> threading.Thread:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        return thread

    # Each loop runs while it is the current one: assigned before it starts, so it never
    # sees a replacement that is not there yet.
    def _start_fast(self) -> None:
        self._fast = self._start("dltui-sample-fast", self._run_fast)
        self._fast.start()

    def _start_slow(self) -> None:
        self._slow_reader = self._start("dltui-sample-slow", self._run_slow)
        self._slow_reader.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the threads, wait for them, and close NVML."""
        self._stopping.set()
        stuck = []
        for thread in self._threads:
            # A thread already given up on as hung gets no more time.
            thread.join(0 if thread in self._abandoned else timeout)
            if thread.is_alive():
                stuck.append(thread.name)
        if stuck:
            # Shutting NVML down under a thread still inside it could crash the process.
            log.warning("sampler threads %s did not stop; leaving NVML open", stuck)
            return
        self._gateway.close()

    # --- threads -----------------------------------------------------------------------------

    def _run_fast(self) -> None:
        self._gateway.watch.watch_this_thread(max(FAST_DEADLINE, 2 * self.period))
        start = time.monotonic()
        tick = 0
        while not self._stopping.is_set() and threading.current_thread() is self._fast:
            try:
                self._guarded("sample", self._tick)
            except CallAbandoned:
                return
            tick += 1
            now = time.monotonic()
            # Late: run the latest due tick now and drop the earlier missed ones.
            tick = max(tick, math.floor((now - start) / self.period))
            if self._stopping.wait(max(0.0, start + tick * self.period - now)):
                break

    def _run_slow(self) -> None:
        self._gateway.watch.watch_this_thread(SLOW_DEADLINE)
        interval = max(_SLOW_MIN_INTERVAL, self.period)
        while not self._stopping.is_set() and threading.current_thread() is self._slow_reader:
            began = time.monotonic()
            try:
                self._guarded("slow read", self._slow_tick)
            except CallAbandoned:
                return
            if self._stopping.wait(max(0.0, began + interval - time.monotonic())):
                break

    def _run_watch(self) -> None:
        """Replace a fast or slow thread stuck in NVML with a new one."""
        while not self._stopping.wait(WATCH_INTERVAL):
            for ident in self._gateway.watch.abandon_stuck():
                if self._fast is not None and ident == self._fast.ident:
                    self._abandoned.append(self._fast)
                    self._start_fast()
                elif self._slow_reader is not None and ident == self._slow_reader.ident:
                    self._abandoned.append(self._slow_reader)
                    self._start_slow()

    def _tick(self) -> None:
        host = self._host.read()
        gpus = self._gateway.read_fast()
        mono = time.monotonic()
        wall = time.time()
        with self._slow_lock:
            gpus = merge_slow(gpus, self._slow, mono)
            if threading.current_thread() is not self._fast:
                return  # replaced while this tick was stuck: the new thread publishes
            processes, self._processes = self._processes, {}
            mig, self._mig = self._mig, {}
        if processes or mig:
            gpus = [dataclasses.replace(gpu, processes=processes.get(gpu.index),
                                        mig=mig.get(gpu.index))
                    if gpu.index in processes or gpu.index in mig else gpu
                    for gpu in gpus]  # fmt: skip
        self._seq += 1
        self._on_sample(Sample(seq=self._seq, wall=wall, mono=mono, host=host, gpus=gpus))

    def _slow_tick(self) -> None:
        values = self._gateway.read_slow()
        processes = self._owners.describe(self._gateway.read_processes())
        mig = self._gateway.read_instances()
        now = time.monotonic()
        with self._slow_lock:
            self._processes.update(processes)
            self._mig.update(mig)
            for index, fields in values.items():
                stamped = self._slow.setdefault(index, {})
                for name, value in fields.items():
                    stamped[name] = (value, now)

    def _guarded(self, what: str, step: Callable[[], None]) -> None:
        """Run one step; an exception is logged (once per distinct message) and the loop goes on."""
        try:
            step()
        except CallAbandoned:
            raise
        except Exception as exc:  # a failing tick must not end the sampler
            message = f"{type(exc).__name__}: {exc}"
            if self._last_error.get(what) != message:
                self._last_error[what] = message
                log.exception("sampler %s failed", what)
            else:
                log.debug("sampler %s failed again: %s", what, message)
        else:
            self._last_error.pop(what, None)


def merge_slow(
    gpus: list[GpuSample], slow: SlowValues, now: float, max_age: float = SLOW_MAX_AGE
) -> list[GpuSample]:
    """Each live GPU's sample with its slow values no older than `max_age` added.

    A value from the fast read wins over a slow one of the same name.
    """
    merged = []
    for gpu in gpus:
        fresh = {
            name: value
            for name, (value, stamp) in slow.get(gpu.index, {}).items()
            if now - stamp <= max_age
        }
        if gpu.state == "ok" and fresh:
            gpu = dataclasses.replace(gpu, values={**fresh, **gpu.values})
        merged.append(gpu)
    return merged
