"""One GPU's reads, as nvitop keeps one object per device: what it supports, its prepared cheap
reads, its GPM samples and counters, its MIG instances, and whether it is lost.

A reader reads what it is asked and says what it can be asked (`wants`); when each read is due
is the sampler's schedule (schedule.py). Every NVML call goes through the gateway (nvml.py),
which keeps the one policy for calls: the hang watch, the error counts, which errors mean "not
supported", "lost" or "this tick only". A reader asks the gateway through `Nvml`, so it never
imports it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from dltui.protocol.inventory import GpuInfo
from dltui.protocol.samples import GpuProcess, GpuSample, GpuState, MigSample
from dltui.telemetry import mig
from dltui.telemetry.nvml_fast import PreparedRead, prepare
from dltui.telemetry.nvml_health import HEALTH_READERS
from dltui.telemetry.nvml_reads import (
    ALL_LINKS,
    GPM_METRICS,
    KB,
    KIB,
    NO_INSTANCE,
    PROCESS_READ,
    PROCESS_UTIL_READ,
    SIMPLE_READS,
    VALUE_MEMBERS,
)
from dltui.telemetry.nvml_watch import CallWatch, Slot
from dltui.telemetry.rates import CounterRates

log = logging.getLogger(__name__)

Values = dict[str, float]


class Missing(Exception):
    """The installed nvidia-ml-py lacks a function: the field is as unsupported as NotSupported."""


class Nvml(Protocol):
    """What a reader needs of the gateway: NVML's module, its calls under the gateway's policy,
    and the policy's verdict on a failure."""

    module: Any
    watch: CallWatch
    failures: tuple[type[BaseException], ...]
    """What an NVML call raises: NVML's errors, and Missing."""

    def call(self, name: str, *args: Any) -> Any: ...

    def quiet(self, name: str, *args: Any) -> Any: ...

    def count_failure(self, name: str, exc: BaseException) -> None: ...

    def kind(self, exc: BaseException) -> str: ...

    def matches(self, exc: BaseException, *names: str) -> bool: ...

    def lost(self, index: int, exc: BaseException) -> None: ...


class GpuReader:
    """One GPU: its inventory, and its cheap, slow, process and MIG reads."""

    def __init__(
        self,
        nvml: Nvml,
        index: int,
        handle: Any,
        info: GpuInfo,
        state: GpuState = "ok",
        active_links: list[int] | None = None,
        gpm_metrics: dict[str, int] | None = None,
        instances: list[mig.Instance] | None = None,
    ) -> None:
        self.nvml = nvml
        self.index = index
        self.handle = handle
        self.info = info
        self.state: GpuState = state
        self.unsupported: set[str] = set()
        self.active_links = active_links or []
        self.nvlink_scopes = [ALL_LINKS]
        self.nvlink_rates = CounterRates()
        self.gpm_samples: list[Any] = []
        """[previous, spare]: the previous sample is reused, so each slow tick takes one."""
        self.gpm_taken = False
        """A GPM sample is taken: the next read gives metrics."""
        self.gpm_metrics = gpm_metrics or {}
        """GPM metrics still believed supported: field -> metric id."""
        self.fast_reads: list[PreparedRead] = (
            prepare(nvml.module, handle) if handle is not None else []
        )
        """The cheap reads a tick makes, those this GPU supports."""
        self.util_seen = 0
        """The latest process-utilization sample's timestamp (µs): each read asks for newer ones."""
        self.mig = instances or []
        """In MIG mode: each instance's handle and description."""
        self.mig_samples: dict[int, list[Any]] = {}
        """GPU instance id -> its GPM samples, as `gpm_samples`."""
        self.mig_taken: set[int] = set()
        """GPU instances with a GPM sample taken: the next read gives metrics."""

    @classmethod
    def open(cls, nvml: Nvml, index: int) -> GpuReader:
        """The GPU at `index`, its inventory taken; one that cannot be opened is lost or in
        error from the start."""
        try:
            handle = nvml.call("nvmlDeviceGetHandleByIndex", index)
        except nvml.failures as exc:
            info = GpuInfo(index=index, name=f"unavailable ({exc})", uuid="", memory_total=0)
            lost = nvml.kind(exc) == "lost"
            return cls(nvml, index, None, info, state="lost" if lost else "error")
        memory = nvml.quiet("nvmlDeviceGetMemoryInfo", handle)
        links = _active_links(nvml, handle)
        support = nvml.quiet("nvmlGpmQueryDeviceSupport", handle)
        gpm = bool(getattr(support, "isSupportedDevice", 0))
        instances = mig.instances(nvml.call, handle, nvml.failures)
        info = GpuInfo(
            index=index,
            name=_text(nvml.quiet("nvmlDeviceGetName", handle)) or "unknown",
            uuid=_text(nvml.quiet("nvmlDeviceGetUUID", handle)) or "",
            memory_total=int(memory.total) if memory is not None else 0,
            pcie_gen=nvml.quiet("nvmlDeviceGetCurrPcieLinkGeneration", handle),
            pcie_width=nvml.quiet("nvmlDeviceGetCurrPcieLinkWidth", handle),
            pcie_gen_max=nvml.quiet("nvmlDeviceGetMaxPcieLinkGeneration", handle),
            pcie_width_max=nvml.quiet("nvmlDeviceGetMaxPcieLinkWidth", handle),
            nvlink_links=len(links),
            gpm=gpm,
            mig=instances is not None,
            mig_instances=[instance.info for instance in instances or []],
        )
        metrics = {
            name: getattr(nvml.module, constant)
            for name, (constant, _) in GPM_METRICS.items()
            if hasattr(nvml.module, constant)
        }
        return cls(nvml, index, handle, info, active_links=links,
                   gpm_metrics=metrics if gpm else {}, instances=instances)  # fmt: skip

    def free(self) -> None:
        """Free the GPM samples this GPU holds."""
        held = [*self.gpm_samples, *(s for kept in self.mig_samples.values() for s in kept)]
        for sample in held:
            try:
                self.nvml.call("nvmlGpmSampleFree", sample)
            except self.nvml.failures as exc:
                log.debug("GPU %d: freeing a GPM sample failed: %s", self.index, exc)
        self.gpm_samples, self.mig_samples = [], {}

    # --- what the gateway's policy says about a failure ----------------------------------------

    def failed(self, group: str, exc: BaseException) -> None:
        """A read of `group` failed: never asked again if unsupported; the GPU lost if lost."""
        kind = self.nvml.kind(exc)
        if kind == "unsupported":
            self.unsupported.add(group)
        elif kind == "lost":
            self.state = "lost"
            self.nvml.lost(self.index, exc)

    def usable(self, group: str) -> bool:
        return (
            self.state == "ok"
            and group not in self.unsupported
            and self.index not in self.nvml.watch.hung
        )

    def wants(self, group: str) -> bool:
        """Whether this GPU has a read of `group` (a slow read, "processes" or "mig") to make
        now: one it supports, on a GPU neither lost nor hung. Whether it is due is the
        schedule's to say."""
        if group == "gpm":
            return self.gpm_usable()
        if group == "mig":
            wanted = bool(self.mig)
        elif group == "nvlink":
            # Field counters only where GPM cannot give NVLink rates in its one call.
            wanted = bool(self.active_links) and not self.gpm_has("nvlink_tx")
        elif group == "pcie":
            wanted = not self.gpm_has("pcie_tx", "pcie_rx")
        elif group == "nvlink_errors":
            wanted = bool(self.active_links)
        else:
            wanted = True
        return wanted and self.usable(group)

    # --- cheap reads -------------------------------------------------------------------------

    def read_fast(self, held: frozenset[str] = frozenset()) -> GpuSample:
        """The cheap counters. A group in `held` (the schedule's: its source has nothing newer
        yet) carries the values it last gave, where it gave some."""
        if self.state != "ok":
            return GpuSample(index=self.index, state=self.state, values={})
        watch = self.nvml.watch
        hung = watch.reason(self.index)
        if hung is not None:
            for read in self.fast_reads:
                read.held = None  # read afresh when the GPU answers again, never carried over
            return GpuSample(index=self.index, state="error", values={}, errors={"nvml": hung})
        # Watched once for all the GPU's reads, not call by call: they take microseconds, ten
        # times a second, and each layer of Python costs more than the read in a cold cache.
        slot = watch.begin(self.index)
        try:
            sample = self._read_counters(slot, held)
        finally:
            watch.end()
        watch.returned(slot)  # a read that outlived its deadline ends this thread here
        return sample

    def _read_counters(self, slot: Slot | None, held: frozenset[str]) -> GpuSample:
        values: Values = {}
        errors: dict[str, str] = {}
        nvml_error = self.nvml.module.NVMLError
        for read in self.fast_reads:
            if read.held is not None and read.group in held:
                values.update(read.held)
                continue
            try:
                read.held = self._read_with_fallback(read, slot)
            except nvml_error as exc:
                read.held = None
                self.failed(read.group, exc)
                if self.state != "ok":
                    return GpuSample(index=self.index, state=self.state, values={})
                if read.group in self.unsupported:  # never asked again
                    self.fast_reads = [kept for kept in self.fast_reads if kept is not read]
                else:
                    errors.update(dict.fromkeys(read.fields, str(exc)))
                continue
            values.update(read.held)
        return GpuSample(index=self.index, state="ok", values=values, errors=errors)

    def _read_with_fallback(self, read: PreparedRead, slot: Slot | None) -> Values:
        """One read, the next of its ways where NVML does not support one."""
        while True:
            name, take = read.ways[0]
            if slot is not None:
                slot.call = name
            try:
                return take()
            except self.nvml.module.NVMLError as exc:
                self.nvml.count_failure(name, exc)
                if len(read.ways) == 1 or self.nvml.kind(exc) != "unsupported":
                    raise
                del read.ways[0]

    # --- slow reads --------------------------------------------------------------------------

    def read_slow(self, groups: Iterable[str]) -> Values:
        """These slow reads ("gpm", SLOW_GROUPS), in this order; a read that failed, or has
        nothing yet (a rate's first counter, GPM's first sample), gives nothing."""
        values: Values = {}
        for group in groups:
            values.update(self._slow(group, self._slow_reader(group)))
        return values

    def gpm_usable(self) -> bool:
        return bool(self.gpm_metrics) and self.usable("gpm")

    def gpm_has(self, *names: str) -> bool:
        """Whether GPM is working on this GPU and gives all these fields."""
        return self.gpm_usable() and all(name in self.gpm_metrics for name in names)

    def _slow(self, group: str, reader: Callable[[], Values]) -> Values:
        self.nvml.watch.begin(self.index)
        try:
            return reader()
        except self.nvml.failures as exc:
            self.failed(group, exc)
            log.debug("GPU %d: %s read failed: %s", self.index, group, exc)
            return {}
        finally:
            self.nvml.watch.end()

    def _slow_reader(self, group: str) -> Callable[[], Values]:
        if group in SIMPLE_READS:
            return lambda: {group: self._read_simple(*SIMPLE_READS[group])}
        if group in HEALTH_READERS:
            return lambda: HEALTH_READERS[group](self.nvml.call, self.nvml.module, self.handle)
        reader: Callable[[], Values] = getattr(self, f"_read_{group}")
        return reader

    def _read_simple(self, name: str, constants: tuple[str, ...], divisor: int) -> float:
        module = self.nvml.module
        value: float = self.nvml.call(name, self.handle, *(getattr(module, c) for c in constants))
        return value / divisor if divisor != 1 else value

    def _read_nvlink(self) -> Values:
        """NVLink TX/RX rates from the cumulative KiB counters and their own timestamps, and
        the counters themselves in bytes (Prometheus counters)."""
        module = self.nvml.module
        scopes = self.nvlink_scopes
        ids = [(module.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, scope) for scope in scopes]
        ids += [(module.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, scope) for scope in scopes]
        entries = self.nvml.call("nvmlDeviceGetFieldValues", self.handle, ids)
        totals = [0, 0]
        stamp = 0
        for position, entry in enumerate(entries):
            if entry.nvmlReturn != 0:
                exc = module.NVMLError(entry.nvmlReturn)
                refused = self.nvml.kind(exc) == "unsupported" or self.nvml.matches(
                    exc, "NVMLError_InvalidArgument"
                )
                if scopes == [ALL_LINKS] and self.active_links and refused:
                    # A driver without the all-links scope: sum the active links instead.
                    self.nvlink_scopes = list(self.active_links)
                    return {}
                raise exc
            totals[position // len(scopes)] += _field_value(entry)
            stamp = max(stamp, entry.timestamp)
        counters: Values = {
            "nvlink_tx_bytes": totals[0] * KIB,
            "nvlink_rx_bytes": totals[1] * KIB,
        }
        rates = self.nvlink_rates.update(  # the counters' own timestamps, in µs
            stamp / 1e6,
            {"nvlink_tx": counters["nvlink_tx_bytes"], "nvlink_rx": counters["nvlink_rx_bytes"]},
        )
        return {**counters, **rates}

    def _read_gpm(self) -> Values:
        # The schedule keeps two samples GPM_MIN_INTERVAL apart at least.
        while len(self.gpm_samples) < 2:
            self.gpm_samples.append(self.nvml.call("nvmlGpmSampleAlloc"))
        previous, current = self.gpm_samples
        self.nvml.call("nvmlGpmSampleGet", self.handle, current)
        first = not self.gpm_taken
        self.gpm_samples = [current, previous]
        self.gpm_taken = True
        return {} if first else self._gpm_metrics(previous, current)

    def _gpm_metrics(self, previous: Any, current: Any, instance: bool = False) -> Values:
        """The GPU's metrics between two samples; a MIG `instance`'s, its utilizations only
        (a metric it lacks is then left out, not struck off the GPU's)."""
        # NVLink rates only where links are up: elsewhere GPM would report a misleading 0 B/s.
        nvlink = bool(self.active_links) and not instance
        wanted = [
            (name, metric)
            for name, metric in self.gpm_metrics.items()
            if (nvlink or not name.startswith("nvlink"))
            and not (instance and name in mig.NOT_PER_INSTANCE)
        ]
        if not wanted:
            return {}
        module = self.nvml.module
        request = self.nvml.call("c_nvmlGpmMetricsGet_t")
        request.version = module.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(wanted)
        request.sample1 = previous
        request.sample2 = current
        for position, (_, metric) in enumerate(wanted):
            request.metrics[position].metricId = metric
        self.nvml.call("nvmlGpmMetricsGet", request)
        values: Values = {}
        for position, (name, _) in enumerate(wanted):
            result = request.metrics[position]
            if result.nvmlReturn == 0:
                if math.isfinite(result.value):
                    values[name] = result.value * GPM_METRICS[name][1]
            elif not instance and self.nvml.kind(module.NVMLError(result.nvmlReturn)) == (
                "unsupported"
            ):
                del self.gpm_metrics[name]
        return values

    def _read_pcie(self) -> Values:
        # Never NVML_FI_DEV_PCIE_COUNT_TX/RX_BYTES: on the H200 they do not count data traffic.
        module, call = self.nvml.module, self.nvml.call
        tx = call("nvmlDeviceGetPcieThroughput", self.handle, module.NVML_PCIE_UTIL_TX_BYTES)
        rx = call("nvmlDeviceGetPcieThroughput", self.handle, module.NVML_PCIE_UTIL_RX_BYTES)
        return {"pcie_tx": tx * KB, "pcie_rx": rx * KB}

    def energy_joules(self) -> float | None:
        """The cumulative energy counter in joules, or None where NVML cannot give it. A
        blocking read (milliseconds): for the benchmark worker's case boundaries, not a tick."""
        if self.state != "ok":
            return None
        millijoules = self.nvml.quiet("nvmlDeviceGetTotalEnergyConsumption", self.handle)
        return millijoules / 1000 if millijoules is not None else None

    # --- processes and MIG instances ---------------------------------------------------------

    def read_processes(self) -> list[GpuProcess] | None:
        """The compute processes on this GPU; None when the read failed."""
        try:
            found = self.nvml.call(PROCESS_READ, self.handle)
        except self.nvml.failures as exc:
            self.failed("processes", exc)
            return None
        # Asked only when there is a process to give it to: the call costs milliseconds.
        utilization = self._process_utilization() if found else {}
        return [_process(p, utilization) for p in found]

    def _process_utilization(self) -> dict[int, tuple[float, float]] | None:
        """pid -> (SM %, memory %), the mean of NVML's samples since the last read (so each
        read gets only new ones); a process with none was idle. None where NVML cannot say."""
        if "process_util" in self.unsupported:
            return None
        try:
            samples = self.nvml.call(PROCESS_UTIL_READ, self.handle, self.util_seen)
        except self.nvml.failures as exc:
            if self.nvml.matches(exc, "NVMLError_NotFound"):
                return {}  # no sample since the last read
            self.failed("process_util", exc)
            return None
        sums: dict[int, list[float]] = {}
        for sample in samples:
            self.util_seen = max(self.util_seen, int(sample.timeStamp))
            total = sums.setdefault(int(sample.pid), [0.0, 0.0, 0.0])
            total[0] += sample.smUtil
            total[1] += sample.memUtil
            total[2] += 1
        return {pid: (sm / count, memory / count) for pid, (sm, memory, count) in sums.items()}

    def read_instances(self) -> list[MigSample] | None:
        """Each MIG instance's memory and, where NVML gives them, GPM metrics; None when the
        read failed."""
        self.nvml.watch.begin(self.index)
        try:
            return [self._read_instance(instance) for instance in self.mig]
        except self.nvml.failures as exc:
            self.failed("mig", exc)
            return None
        finally:
            self.nvml.watch.end()

    def _read_instance(self, instance: mig.Instance) -> MigSample:
        values = mig.memory(self.nvml.call, instance)
        gi = instance.info.gpu_instance
        if self.gpm_metrics and "mig_gpm" not in self.unsupported:
            try:
                values.update(self._read_instance_gpm(gi))
            except self.nvml.failures as exc:
                self.failed("mig_gpm", exc)
        return MigSample(gi, values)

    def _read_instance_gpm(self, gi: int) -> Values:
        samples = self.mig_samples.setdefault(gi, [])
        while len(samples) < 2:
            samples.append(self.nvml.call("nvmlGpmSampleAlloc"))
        previous, current = samples
        self.nvml.call("nvmlGpmMigSampleGet", self.handle, gi, current)
        first = gi not in self.mig_taken
        self.mig_taken.add(gi)
        self.mig_samples[gi] = [current, previous]
        return {} if first else self._gpm_metrics(previous, current, instance=True)


def _active_links(nvml: Nvml, handle: Any) -> list[int]:
    enabled = getattr(nvml.module, "NVML_FEATURE_ENABLED", 1)
    links = []
    for link in range(getattr(nvml.module, "NVML_NVLINK_MAX_LINKS", 0)):
        state = nvml.quiet("nvmlDeviceGetNvLinkState", handle, link)
        if state is None and link == 0:
            break  # NotSupported on link 0: this GPU has no NVLink
        if state == enabled:
            links.append(link)
    return links


def _process(found: Any, utilization: dict[int, tuple[float, float]] | None) -> GpuProcess:
    """NVML's process entry as ours: memory and MIG instance where NVML says."""
    memory = getattr(found, "usedGpuMemory", None)
    gi = getattr(found, "gpuInstanceId", NO_INSTANCE)
    ci = getattr(found, "computeInstanceId", NO_INSTANCE)
    pid = int(found.pid)
    sm, mem = (None, None) if utilization is None else utilization.get(pid, (0.0, 0.0))
    return GpuProcess(pid, None if memory is None else int(memory), sm_util=sm, mem_util=mem,
                      gpu_instance=None if gi == NO_INSTANCE else int(gi),
                      compute_instance=None if ci == NO_INSTANCE else int(ci))  # fmt: skip


def _field_value(entry: Any) -> int:
    member = VALUE_MEMBERS[entry.valueType] if entry.valueType < len(VALUE_MEMBERS) else "ullVal"
    value: int = getattr(entry.value, member)
    return value


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    text: str | None = value  # nvidia-ml-py answers str, or bytes in older releases
    return text
