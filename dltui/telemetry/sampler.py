"""The sampling threads: a fast tick on a fixed schedule, and a slow reader beside it.

The fast thread ticks at the asked rate on a monotonic grid (tick k is due at start + k·period),
so the rate does not drift; when a tick overruns it runs the late tick at once and drops the
ones it missed (counted in `missed`) rather than bursting to catch up. GPM and the blocking PCIe
call run on a second thread, which the fast one wakes when they are due, and the fast tick
merges the latest of their values, so a slow NVML call never delays a sample. NVML never runs
on the agent's event loop: `on_sample` is called from the fast thread.

What each tick and each slow turn reads is the sampler's `Schedule` (schedule.py): the GPUs'
readers read what it asks, the gateway keeps the policy for each call.

The rate follows what consumers need (`set_rate`, the agent decides): a change takes a sample at
once and starts a new grid. The slow thread follows it too: nothing is read more often than
samples are taken (the slow reads' own intervals are the floor).

A call that never returns is outlived: a watchdog thread finds a GPU read past its deadline,
marks that GPU hung (its samples say so) and starts a new fast or slow thread that skips it;
the stuck thread ends when its call returns (see nvml_watch).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

from dltui.protocol.inventory import Inventory
from dltui.protocol.messages import Event, Sample
from dltui.protocol.samples import GpuProcess, GpuSample, MigSample
from dltui.telemetry.host import HostSampler
from dltui.telemetry.inventory import build_inventory
from dltui.telemetry.nvml import NvmlGateway
from dltui.telemetry.nvml_reads import SLOW_INTERVALS
from dltui.telemetry.nvml_watch import CallAbandoned
from dltui.telemetry.processes import Owners
from dltui.telemetry.schedule import Schedule
from dltui.telemetry.wakeup import Wakeup
from dltui.telemetry.xid import watch_xid

log = logging.getLogger(__name__)

SLOW_MAX_AGE = 2.5 * max(SLOW_INTERVALS.values())
"""Seconds after which a slow value is dropped rather than shown as current."""

FAST_DEADLINE = 0.25
"""Seconds one GPU's fast read may take (it takes microseconds) before the GPU counts as hung."""
SLOW_DEADLINE = 2.0
"""The same for one slow read (the longest, the PCIe call, blocks about 20 ms)."""
WATCH_INTERVAL = 1.0
"""Seconds between the watchdog's looks for a stuck read while none is in progress. Each look
wakes a thread, which costs a VM more than the look (docs/results/telemetry-h200.md), so it
looks once a second rather than once a deadline; a read it finds in progress is looked at
again as its deadline passes."""
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
        job_running: Callable[[], bool] = lambda: False,
    ) -> None:
        """`job_running` says whether a benchmark job runs now (some slow reads are taken more
        often then, nvml_reads.JOB_INTERVALS); asked from the slow thread."""
        if not rate_hz > 0:
            raise ValueError(f"rate_hz must be positive, got {rate_hz}")
        self.rate_hz = rate_hz
        """The rate it starts at; `set_rate` changes it."""
        self.open_deadline = open_deadline
        self.period = 1.0 / rate_hz
        self._fast_deadline = max(FAST_DEADLINE, 2 * self.period)
        self._on_sample = on_sample
        self._gateway = gateway if gateway is not None else NvmlGateway()
        self._host = host if host is not None else HostSampler()
        self._inventory: Inventory | None = None
        self._stopping = threading.Event()
        self._wake_fast = Wakeup()
        self._wake_slow = Wakeup()
        self._wake_watch = Wakeup()
        """Set on a rate change or a stop: the loops look again at once."""
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
        self._schedule = Schedule()
        self._on_event = on_event
        """Gets each XID, from a thread of its own."""
        self._job_running = job_running
        self._slow_lock = threading.Lock()
        self._fresh: dict[int, dict[str, float]] = {}
        """The slow values as samples carry them, rebuilt only when a slow read brought new
        ones (`_slow_changed`) or one of them went stale (`_fresh_until`)."""
        self._slow_changed = False
        self._fresh_until = math.inf
        self._slow_due = math.inf
        """When the fast thread next wakes the slow one (monotonic)."""
        self._seq = 0
        self._last_error: dict[str, str] = {}
        self.lag = 0.0
        """Seconds the last tick ran after it was due."""
        self.missed = 0
        """Ticks dropped because the loop ran late."""

    @property
    def nvml_errors(self) -> dict[str, int]:
        """NVML call -> calls that failed (fields a GPU does not support are not errors)."""
        return dict(self._gateway.errors)

    def set_rate(self, rate_hz: float) -> None:
        """Sample at `rate_hz` from now on: a sample now, then on the new schedule. Any thread."""
        if not rate_hz > 0:
            raise ValueError(f"rate_hz must be positive, got {rate_hz}")
        if 1.0 / rate_hz != self.period:
            self.period = 1.0 / rate_hz
            self._wake_fast.set()
            self._wake_slow.set()
            self._wake_watch.set()

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
        self._slow_due = time.monotonic() + self._slow_interval()
        self._slow_reader = self._start("dltui-sample-slow", self._run_slow)
        self._slow_reader.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the threads, wait for them, and close NVML."""
        self._stopping.set()
        self._wake_fast.set()
        self._wake_slow.set()
        self._wake_watch.set()
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
        for wake in (self._wake_fast, self._wake_slow, self._wake_watch):
            wake.close()
        self._gateway.close()
        self._host.close()

    # --- threads -----------------------------------------------------------------------------

    def _run_fast(self) -> None:
        self._gateway.watch.watch_this_thread(self._fast_deadline)
        start, period, tick = time.monotonic(), self.period, 0
        while not self._stopping.is_set() and threading.current_thread() is self._fast:
            self.lag = max(0.0, time.monotonic() - (start + tick * period))
            try:
                self._guarded("sample", self._tick)
            except CallAbandoned:
                return
            tick += 1
            now = time.monotonic()
            if now >= self._slow_due:
                # The slow thread's turn. Woken by this thread as it finishes a tick rather than
                # by a timer of its own, it finds the CPU awake and the interpreter warm.
                self._slow_due = now + self._slow_interval()
                self._wake_slow.set()
            # Late: run the latest due tick now and drop the earlier missed ones.
            latest = math.floor((now - start) / period)
            if latest > tick:
                self.missed += latest - tick
                tick = latest
            if self._sleep(self._wake_fast, start + tick * period, period):
                start, period, tick = time.monotonic(), self.period, 0  # a new rate: a new grid
                # The slow thread read at the change (set_rate woke it): its next turn follows
                # the new rate, not the old one's.
                self._slow_due = start + self._slow_interval()

    def _slow_interval(self) -> float:
        return self._schedule.slow_every(self.period)

    def _sleep(self, wake: Wakeup, until: float, period: float) -> bool:
        """Wait until `until`; True, at once, when the rate changes or the sampler stops."""
        while (delay := until - time.monotonic()) > 0:
            if wake.wait(delay):
                wake.clear()
                if self._stopping.is_set() or self.period != period:
                    return True
        return self._stopping.is_set()

    def _run_slow(self) -> None:
        self._gateway.watch.watch_this_thread(SLOW_DEADLINE)
        while not self._stopping.is_set() and threading.current_thread() is self._slow_reader:
            interval = self._slow_interval()
            try:
                self._guarded("slow read", self._slow_tick)
            except CallAbandoned:
                return
            # The fast thread wakes this one when its turn comes (and on a rate change or a
            # stop); it wakes by itself only while the fast thread is stuck in NVML.
            if self._wake_slow.wait(2 * interval):
                self._wake_slow.clear()

    def _run_watch(self) -> None:
        """Replace a fast or slow thread stuck in NVML with a new one; at once when the rate
        changes (a client waiting for samples is not kept waiting on a stuck tick)."""
        while not self._stopping.is_set():
            timeout = WATCH_INTERVAL
            if (deadline := self._gateway.watch.next_deadline()) is not None:
                # Just past it: a read exactly at its deadline is not stuck yet.
                timeout = min(timeout, max(0.0, deadline - time.monotonic()) + 0.01)
            if self._wake_watch.wait(timeout):
                self._wake_watch.clear()
                if self._stopping.is_set():
                    break
            for ident in self._gateway.watch.abandon_stuck():
                if self._fast is not None and ident == self._fast.ident:
                    self._abandoned.append(self._fast)
                    self._start_fast()
                elif self._slow_reader is not None and ident == self._slow_reader.ident:
                    self._abandoned.append(self._slow_reader)
                    self._start_slow()

    def _tick(self) -> None:
        host = self._host.read()
        gpus = self._gateway.read_fast(self._schedule.held(time.monotonic()))
        mono = time.monotonic()
        wall = time.time()
        with self._slow_lock:
            if self._slow_changed or mono > self._fresh_until:
                self._fresh, self._fresh_until = fresh_slow(self._slow, mono)
                self._slow_changed = False
            fresh = self._fresh
            if threading.current_thread() is not self._fast:
                return  # replaced while this tick was stuck: the new thread publishes
            processes, self._processes = self._processes, {}
            mig, self._mig = self._mig, {}
        if fresh or processes or mig:
            gpus = [merged(gpu, fresh.get(gpu.index), processes.get(gpu.index), mig.get(gpu.index))
                    for gpu in gpus]  # fmt: skip
        self._seq += 1
        self._on_sample(Sample(seq=self._seq, wall=wall, mono=mono, host=host, gpus=gpus))

    def _slow_tick(self) -> None:
        readers, schedule = self._gateway.readers, self._schedule
        now = time.monotonic()
        values = schedule.read_slow(readers, now, self._job_running())
        processes = self._owners.describe(schedule.read_processes(readers, now))
        mig = schedule.read_instances(readers, now)
        now = time.monotonic()
        with self._slow_lock:
            self._processes.update(processes)
            self._mig.update(mig)
            for index, fields in values.items():
                stamped = self._slow.setdefault(index, {})
                for name, value in fields.items():
                    stamped[name] = (value, now)
            self._slow_changed = self._slow_changed or bool(values)

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


def fresh_slow(
    slow: SlowValues, now: float, max_age: float = SLOW_MAX_AGE
) -> tuple[dict[int, dict[str, float]], float]:
    """Each GPU's slow values no older than `max_age`, and when the first of them goes stale."""
    fresh: dict[int, dict[str, float]] = {}
    oldest = math.inf
    for index, stamped in slow.items():
        kept = {}
        for name, (value, stamp) in stamped.items():
            if now - stamp <= max_age:
                kept[name] = value
                oldest = min(oldest, stamp)
        if kept:
            fresh[index] = kept
    return fresh, oldest + max_age


def merged(
    gpu: GpuSample,
    slow: dict[str, float] | None,
    processes: list[GpuProcess] | None,
    mig: list[MigSample] | None,
) -> GpuSample:
    """A live GPU's sample with its slow values added (a fast read's value wins over a slow one
    of the same name), and the process list and MIG readings read since the last sample, if
    there are any."""
    values = {**slow, **gpu.values} if slow and gpu.state == "ok" else gpu.values
    if values is gpu.values and processes is None and mig is None:
        return gpu
    return GpuSample(gpu.index, gpu.state, values, gpu.errors, processes, mig)
