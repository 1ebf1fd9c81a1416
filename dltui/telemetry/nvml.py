"""The one gateway to NVML: nothing else in dltui imports pynvml.

NVML differs across GPUs, drivers and nvidia-ml-py releases, and it fails in many ways. This
module turns all of that into three outcomes per field: a value, absent (not supported, found
once per device and never asked again), or an error for this tick. A GPU that falls off the
bus becomes a sticky "lost" state while the others go on. Callers never see an NVML exception.

The NVML module is a constructor argument, so tests (and fault injection) hand in a fake. A
call that never returns marks its GPU hung through `watch` (see nvml_watch), so that it stalls
neither the other GPUs nor the agent.
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dltui.protocol.messages import GpuInfo, GpuProcess, GpuSample, GpuState, MigSample
from dltui.telemetry import mig
from dltui.telemetry.nvml_fast import PreparedRead, prepare
from dltui.telemetry.nvml_health import HEALTH_READERS
from dltui.telemetry.nvml_reads import (
    ALL_LINKS,
    GPM_METRICS,
    GPM_MIN_INTERVAL,
    INIT_REASONS,
    JOB_INTERVALS,
    KB,
    KIB,
    NO_INSTANCE,
    PROCESS_READ,
    PROCESS_UTIL_READ,
    SIMPLE_READS,
    SLOW_INTERVALS,
    VALUE_MEMBERS,
)
from dltui.telemetry.nvml_watch import CallWatch, Slot
from dltui.telemetry.rates import CounterRates

log = logging.getLogger(__name__)


class _Missing(Exception):
    """The installed nvidia-ml-py lacks a function: the field is as unsupported as NotSupported."""


class Unanswered(Exception):
    """NVML could not answer a read (not supported, not in this nvidia-ml-py, failed); the
    message is NVML's reason."""


@dataclass
class _Device:
    index: int
    handle: Any
    info: GpuInfo
    state: GpuState = "ok"
    unsupported: set[str] = field(default_factory=set)
    active_links: list[int] = field(default_factory=list)
    nvlink_scopes: list[int] = field(default_factory=lambda: [ALL_LINKS])
    nvlink_rates: CounterRates = field(default_factory=CounterRates)
    gpm_samples: list[Any] = field(default_factory=list)
    """[previous, spare]: the previous sample is reused, so each slow tick takes one."""
    gpm_time: float | None = None
    gpm_metrics: dict[str, int] = field(default_factory=dict)
    """GPM metrics still believed supported: field -> metric id."""
    fast_reads: list[PreparedRead] = field(default_factory=list)
    """The cheap reads a tick makes, those this GPU supports."""
    due_times: dict[str, float] = field(default_factory=dict)
    """When each slow read (SLOW_INTERVALS) was last due: group -> monotonic time."""
    util_seen: int = 0
    """The latest process-utilization sample's timestamp (µs): each read asks for newer ones."""
    mig: list[mig.Instance] = field(default_factory=list)
    """In MIG mode: each instance's handle and description."""
    mig_samples: dict[int, list[Any]] = field(default_factory=dict)
    """GPU instance id -> its GPM samples, as `gpm_samples`."""
    mig_taken: set[int] = field(default_factory=set)
    """GPU instances with a GPM sample taken: the next read gives metrics."""


class NvmlGateway:
    """NVML behind a small interface: `open`, `read_fast`, `read_slow`, `close`.

    `read_fast` runs on the sampling thread and costs microseconds per GPU; `read_slow` takes
    GPM samples, the energy counter (milliseconds on the H200) and the blocking PCIe call, so
    it runs on its own thread.
    """

    def __init__(self, nvml: Any | None = None, clock: Callable[[], float] = time.monotonic):
        self._nvml: Any = nvml
        """pynvml (or a fake of it); None until `open` imports pynvml."""
        self._clock = clock
        self._devices: list[_Device] = []
        self._opened = False
        self._initialized = False
        self._any_lost = False
        self.error: str | None = None
        """Why there are no GPUs; None when NVML started and found some."""
        self.driver_version: str | None = None
        self.cuda_version: str | None = None
        self.watch = CallWatch()
        self.errors: Counter[str] = Counter()
        """NVML call -> how many times it failed (NotSupported is support, not an error)."""

    @property
    def count(self) -> int:
        return len(self._devices)

    @property
    def gpus(self) -> list[GpuInfo]:
        return [dev.info for dev in self._devices]

    @classmethod
    def unavailable(cls, reason: str) -> NvmlGateway:
        """A gateway with no GPUs that never touches NVML; `error` is `reason`."""
        gateway = cls()
        gateway._opened, gateway.error = True, reason
        return gateway

    # --- start and stop ----------------------------------------------------------------------

    def open(self) -> None:
        """Start NVML and take the inventory; on failure, zero GPUs and `error` says why."""
        if self._opened:
            return
        self._opened = True
        if self._nvml is None:
            try:
                import pynvml
            except ImportError as exc:
                self.error = f"nvidia-ml-py is not installed: {exc}"
                return
            self._nvml = pynvml
        try:
            self._call("nvmlInit")
        except (_Missing, self._nvml.NVMLError) as exc:
            self.error = self._init_reason(exc)
            return
        self._initialized = True
        try:
            count = self._call("nvmlDeviceGetCount")
        except (_Missing, self._nvml.NVMLError) as exc:
            self.error = f"NVML cannot count the GPUs: {exc}"
            return
        self.driver_version = _text(self._quiet("nvmlSystemGetDriverVersion"))
        cuda = self._quiet("nvmlSystemGetCudaDriverVersion")
        if cuda:
            self.cuda_version = f"{cuda // 1000}.{cuda % 1000 // 10}"
        self._devices = [self._open_device(index) for index in range(count)]
        if not self._devices:
            self.error = "NVML found no GPUs"

    def close(self) -> None:
        """Free GPM samples and shut NVML down; afterwards the gateway reports no GPUs."""
        for dev in self._devices:
            for sample in [
                *dev.gpm_samples,
                *(s for kept in dev.mig_samples.values() for s in kept),
            ]:
                try:
                    self._call("nvmlGpmSampleFree", sample)
                except (_Missing, self._nvml.NVMLError) as exc:
                    log.debug("GPU %d: freeing a GPM sample failed: %s", dev.index, exc)
            dev.gpm_samples, dev.mig_samples = [], {}
        self._devices = []
        if self._initialized:
            self._initialized = False
            try:
                self._nvml.nvmlShutdown()
            except self._nvml.NVMLError as exc:
                log.debug("nvmlShutdown failed: %s", exc)

    def _init_reason(self, exc: BaseException) -> str:
        for name, reason in INIT_REASONS.items():
            if self._is(exc, name):
                return reason
        return f"NVML failed to start: {exc}"

    def _open_device(self, index: int) -> _Device:
        try:
            handle = self._call("nvmlDeviceGetHandleByIndex", index)
        except (_Missing, self._nvml.NVMLError) as exc:
            info = GpuInfo(index=index, name=f"unavailable ({exc})", uuid="", memory_total=0)
            return _Device(index, None, info, state="lost" if self._is_lost(exc) else "error")
        memory = self._quiet("nvmlDeviceGetMemoryInfo", handle)
        links = self._active_links(handle)
        support = self._quiet("nvmlGpmQueryDeviceSupport", handle)
        gpm = bool(getattr(support, "isSupportedDevice", 0))
        instances = mig.instances(self._call, handle, (_Missing, self._nvml.NVMLError))
        info = GpuInfo(
            index=index,
            name=_text(self._quiet("nvmlDeviceGetName", handle)) or "unknown",
            uuid=_text(self._quiet("nvmlDeviceGetUUID", handle)) or "",
            memory_total=int(memory.total) if memory is not None else 0,
            pcie_gen=self._quiet("nvmlDeviceGetCurrPcieLinkGeneration", handle),
            pcie_width=self._quiet("nvmlDeviceGetCurrPcieLinkWidth", handle),
            pcie_gen_max=self._quiet("nvmlDeviceGetMaxPcieLinkGeneration", handle),
            pcie_width_max=self._quiet("nvmlDeviceGetMaxPcieLinkWidth", handle),
            nvlink_links=len(links),
            gpm=gpm,
            mig=instances is not None,
            mig_instances=[instance.info for instance in instances or []],
        )
        metrics = {
            name: getattr(self._nvml, constant)
            for name, (constant, _) in GPM_METRICS.items()
            if hasattr(self._nvml, constant)
        }
        return _Device(index, handle, info, active_links=links, gpm_metrics=metrics if gpm else {},
                       mig=instances or [], fast_reads=prepare(self._nvml, handle))  # fmt: skip

    def _active_links(self, handle: Any) -> list[int]:
        enabled = getattr(self._nvml, "NVML_FEATURE_ENABLED", 1)
        links = []
        for link in range(getattr(self._nvml, "NVML_NVLINK_MAX_LINKS", 0)):
            state = self._quiet("nvmlDeviceGetNvLinkState", handle, link)
            if state is None and link == 0:
                break  # NotSupported on link 0: this GPU has no NVLink
            if state == enabled:
                links.append(link)
        return links

    # --- cheap reads -------------------------------------------------------------------------

    def read_fast(self) -> list[GpuSample]:
        """One sample per GPU from the cheap counters."""
        return [self._read_device(dev) for dev in self._devices]

    def _read_device(self, dev: _Device) -> GpuSample:
        if dev.state != "ok":
            return GpuSample(index=dev.index, state=dev.state, values={})
        hung = self.watch.reason(dev.index)
        if hung is not None:
            return GpuSample(index=dev.index, state="error", values={}, errors={"nvml": hung})
        # Watched once for all the GPU's reads, not call by call: they take microseconds, ten
        # times a second, and each layer of Python costs more than the read in a cold cache.
        slot = self.watch.begin(dev.index)
        try:
            sample = self._read_counters(dev, slot)
        finally:
            self.watch.end()
        self.watch.returned(slot)  # a read that outlived its deadline ends this thread here
        return sample

    def _read_counters(self, dev: _Device, slot: Slot | None) -> GpuSample:
        values: dict[str, float] = {}
        errors: dict[str, str] = {}
        now = self._clock()
        for read in dev.fast_reads:
            if read.held is not None and now - read.taken < read.interval:
                values.update(read.held)  # the driver has nothing newer yet
                continue
            try:
                read.held = self._take(read, slot)
            except self._nvml.NVMLError as exc:
                read.held = None
                self._failed(dev, read.group, exc)
                if dev.state != "ok":
                    return GpuSample(index=dev.index, state=dev.state, values={})
                if read.group in dev.unsupported:  # never asked again
                    dev.fast_reads = [kept for kept in dev.fast_reads if kept is not read]
                else:
                    errors.update(dict.fromkeys(read.fields, str(exc)))
                continue
            read.taken = now
            values.update(read.held)
        return GpuSample(index=dev.index, state="ok", values=values, errors=errors)

    def _take(self, read: PreparedRead, slot: Slot | None) -> dict[str, float]:
        """One read, the next of its ways where NVML does not support one."""
        while True:
            name, take = read.ways[0]
            if slot is not None:
                slot.call = name
            try:
                return take()
            except self._nvml.NVMLError as exc:
                self._count(name, exc)
                if len(read.ways) == 1 or self._kind(exc) != "unsupported":
                    raise
                del read.ways[0]

    def _read_simple(
        self, dev: _Device, name: str, constants: tuple[str, ...], divisor: int
    ) -> float:
        value: float = self._call(name, dev.handle, *(getattr(self._nvml, c) for c in constants))
        return value / divisor if divisor != 1 else value

    def _read_nvlink(self, dev: _Device) -> dict[str, float]:
        """NVLink TX/RX rates from the cumulative KiB counters and their own timestamps, and
        the counters themselves in bytes (Prometheus counters)."""
        nvml = self._nvml
        scopes = dev.nvlink_scopes
        ids = [(nvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, scope) for scope in scopes]
        ids += [(nvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, scope) for scope in scopes]
        entries = self._call("nvmlDeviceGetFieldValues", dev.handle, ids)
        totals = [0, 0]
        stamp = 0
        for position, entry in enumerate(entries):
            if entry.nvmlReturn != 0:
                exc = nvml.NVMLError(entry.nvmlReturn)
                refused = self._kind(exc) == "unsupported" or self._is(
                    exc, "NVMLError_InvalidArgument"
                )
                if scopes == [ALL_LINKS] and dev.active_links and refused:
                    # A driver without the all-links scope: sum the active links instead.
                    dev.nvlink_scopes = list(dev.active_links)
                    return {}
                raise exc
            totals[position // len(scopes)] += _field_value(entry)
            stamp = max(stamp, entry.timestamp)
        counters: dict[str, float] = {
            "nvlink_tx_bytes": totals[0] * KIB,
            "nvlink_rx_bytes": totals[1] * KIB,
        }
        rates = dev.nvlink_rates.update(  # the counters' own timestamps, in µs
            stamp / 1e6,
            {"nvlink_tx": counters["nvlink_tx_bytes"], "nvlink_rx": counters["nvlink_rx_bytes"]},
        )
        return {**counters, **rates}

    # --- slow reads --------------------------------------------------------------------------

    def read_slow(self, job_running: bool = False) -> dict[int, dict[str, float]]:
        """GPM metrics, energy, NVLink counters and, where GPM gives no PCIe rates, the ~20 ms
        PCIe call, each at its own interval (SLOW_INTERVALS; JOB_INTERVALS while a benchmark
        job runs).

        GPU index -> values; a GPU or field with nothing new this time is absent.
        """
        out: dict[int, dict[str, float]] = {}
        now = self._clock()
        intervals = JOB_INTERVALS if job_running else SLOW_INTERVALS
        # GPM first, for every GPU: keeps each GPU's sample spacing steady.
        for dev in self._devices:
            if self._gpm_usable(dev) and self._due(dev, "gpm", now):
                self._slow(dev, "gpm", self._read_gpm, out)
        for dev in self._devices:
            wanted = {
                # Field counters only where GPM cannot give NVLink rates in its one call.
                "nvlink": bool(dev.active_links) and not self._gpm_has(dev, "nvlink_tx"),
                "pcie": not self._gpm_has(dev, "pcie_tx", "pcie_rx"),
                **dict.fromkeys(SIMPLE_READS, True),
                **dict.fromkeys(HEALTH_READERS, True),
                "nvlink_errors": bool(dev.active_links),
            }
            for group, wanted_here in wanted.items():
                if (wanted_here and self._usable(dev, group)
                        and self._due(dev, group, now, intervals)):  # fmt: skip
                    self._slow(dev, group, self._slow_reader(group), out)
        return out

    def _usable(self, dev: _Device, group: str) -> bool:
        return (
            dev.state == "ok" and group not in dev.unsupported and dev.index not in self.watch.hung
        )

    def _gpm_usable(self, dev: _Device) -> bool:
        return bool(dev.gpm_metrics) and self._usable(dev, "gpm")

    def _gpm_has(self, dev: _Device, *names: str) -> bool:
        """Whether GPM is working on this GPU and gives all these fields."""
        return self._gpm_usable(dev) and all(name in dev.gpm_metrics for name in names)

    @staticmethod
    def _due(
        dev: _Device, group: str, now: float, intervals: dict[str, float] = SLOW_INTERVALS
    ) -> bool:
        last = dev.due_times.get(group)
        # A little slack, so a thread ticking at exactly the interval never skips a turn.
        if last is not None and now - last < intervals.get(group, 0.0) * 0.95:
            return False
        dev.due_times[group] = now
        return True

    def _slow(
        self,
        dev: _Device,
        group: str,
        reader: Callable[[_Device], dict[str, float]],
        out: dict[int, dict[str, float]],
    ) -> None:
        self.watch.begin(dev.index)
        try:
            values = reader(dev)
        except (_Missing, self._nvml.NVMLError) as exc:
            self._failed(dev, group, exc)
            log.debug("GPU %d: %s read failed: %s", dev.index, group, exc)
            return
        finally:
            self.watch.end()
        if values:
            out.setdefault(dev.index, {}).update(values)

    def _slow_reader(self, group: str) -> Callable[[_Device], dict[str, float]]:
        if group in SIMPLE_READS:
            return lambda dev: {group: self._read_simple(dev, *SIMPLE_READS[group])}
        if group in HEALTH_READERS:
            return lambda dev: HEALTH_READERS[group](self._call, self._nvml, dev.handle)
        reader: Callable[[_Device], dict[str, float]] = getattr(self, f"_read_{group}")
        return reader

    def _read_gpm(self, dev: _Device) -> dict[str, float]:
        now = self._clock()
        if dev.gpm_time is not None and now - dev.gpm_time < GPM_MIN_INTERVAL:
            return {}
        while len(dev.gpm_samples) < 2:
            dev.gpm_samples.append(self._call("nvmlGpmSampleAlloc"))
        previous, current = dev.gpm_samples
        self._call("nvmlGpmSampleGet", dev.handle, current)
        first = dev.gpm_time is None
        dev.gpm_samples = [current, previous]
        dev.gpm_time = now
        return {} if first else self._gpm_metrics(dev, previous, current)

    def _gpm_metrics(
        self, dev: _Device, previous: Any, current: Any, instance: bool = False
    ) -> dict[str, float]:
        """The GPU's metrics between two samples; a MIG `instance`'s, its utilizations only
        (a metric it lacks is then left out, not struck off the GPU's)."""
        # NVLink rates only where links are up: elsewhere GPM would report a misleading 0 B/s.
        nvlink = bool(dev.active_links) and not instance
        wanted = [
            (name, metric)
            for name, metric in dev.gpm_metrics.items()
            if (nvlink or not name.startswith("nvlink"))
            and not (instance and name in mig.NOT_PER_INSTANCE)
        ]
        if not wanted:
            return {}
        request = self._call("c_nvmlGpmMetricsGet_t")
        request.version = self._nvml.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(wanted)
        request.sample1 = previous
        request.sample2 = current
        for position, (_, metric) in enumerate(wanted):
            request.metrics[position].metricId = metric
        self._call("nvmlGpmMetricsGet", request)
        values: dict[str, float] = {}
        for position, (name, _) in enumerate(wanted):
            result = request.metrics[position]
            if result.nvmlReturn == 0:
                if math.isfinite(result.value):
                    values[name] = result.value * GPM_METRICS[name][1]
            elif (
                not instance
                and self._kind(self._nvml.NVMLError(result.nvmlReturn)) == "unsupported"
            ):
                del dev.gpm_metrics[name]
        return values

    def _read_pcie(self, dev: _Device) -> dict[str, float]:
        # Never NVML_FI_DEV_PCIE_COUNT_TX/RX_BYTES: on the H200 they do not count data traffic.
        nvml = self._nvml
        tx = self._call("nvmlDeviceGetPcieThroughput", dev.handle, nvml.NVML_PCIE_UTIL_TX_BYTES)
        rx = self._call("nvmlDeviceGetPcieThroughput", dev.handle, nvml.NVML_PCIE_UTIL_RX_BYTES)
        return {"pcie_tx": tx * KB, "pcie_rx": rx * KB}

    def read_processes(self) -> dict[int, list[GpuProcess]]:
        """The compute processes on each GPU that is due (SLOW_INTERVALS); for the slow thread.
        A GPU that was not due, or whose read failed, is absent."""
        out: dict[int, list[GpuProcess]] = {}
        now = self._clock()
        for dev in self._devices:
            if not (self._usable(dev, "processes") and self._due(dev, "processes", now)):
                continue
            try:
                found = self._call(PROCESS_READ, dev.handle)
            except (_Missing, self._nvml.NVMLError) as exc:
                self._failed(dev, "processes", exc)
                continue
            # Asked only when there is a process to give it to: the call costs ~3 ms on an H200.
            utilization = self._process_utilization(dev) if found else {}
            out[dev.index] = [_process(p, utilization) for p in found]
        return out

    def _process_utilization(self, dev: _Device) -> dict[int, tuple[float, float]] | None:
        """pid -> (SM %, memory %), the mean of NVML's samples since the last read (so each
        read gets only new ones); a process with none was idle. None where NVML cannot say."""
        if "process_util" in dev.unsupported:
            return None
        try:
            samples = self._call(PROCESS_UTIL_READ, dev.handle, dev.util_seen)
        except (_Missing, self._nvml.NVMLError) as exc:
            if self._is(exc, "NVMLError_NotFound"):
                return {}  # no sample since the last read
            self._failed(dev, "process_util", exc)
            return None
        sums: dict[int, list[float]] = {}
        for sample in samples:
            dev.util_seen = max(dev.util_seen, int(sample.timeStamp))
            total = sums.setdefault(int(sample.pid), [0.0, 0.0, 0.0])
            total[0] += sample.smUtil
            total[1] += sample.memUtil
            total[2] += 1
        return {pid: (sm / count, memory / count) for pid, (sm, memory, count) in sums.items()}

    def read_instances(self) -> dict[int, list[MigSample]]:
        """Each MIG instance's memory and, where NVML gives them, GPM metrics, for the GPUs in
        MIG mode that are due (SLOW_INTERVALS); for the slow thread."""
        out: dict[int, list[MigSample]] = {}
        now = self._clock()
        for dev in self._devices:
            if not (dev.mig and self._usable(dev, "mig") and self._due(dev, "mig", now)):
                continue
            self.watch.begin(dev.index)
            try:
                out[dev.index] = [self._read_instance(dev, instance) for instance in dev.mig]
            except (_Missing, self._nvml.NVMLError) as exc:
                self._failed(dev, "mig", exc)
            finally:
                self.watch.end()
        return out

    def _read_instance(self, dev: _Device, instance: mig.Instance) -> MigSample:
        values = mig.memory(self._call, instance)
        gi = instance.info.gpu_instance
        if dev.gpm_metrics and "mig_gpm" not in dev.unsupported:
            try:
                values.update(self._read_instance_gpm(dev, gi))
            except (_Missing, self._nvml.NVMLError) as exc:
                self._failed(dev, "mig_gpm", exc)
        return MigSample(gi, values)

    def _read_instance_gpm(self, dev: _Device, gi: int) -> dict[str, float]:
        samples = dev.mig_samples.setdefault(gi, [])
        while len(samples) < 2:
            samples.append(self._call("nvmlGpmSampleAlloc"))
        previous, current = samples
        self._call("nvmlGpmMigSampleGet", dev.handle, gi, current)
        first = gi not in dev.mig_taken
        dev.mig_taken.add(gi)
        dev.mig_samples[gi] = [current, previous]
        return {} if first else self._gpm_metrics(dev, previous, current, instance=True)

    # --- for the benchmark worker --------------------------------------------------------------

    def index_of(self, uuid: str) -> int | None:
        """The NVML index of the GPU with this UUID ("GPU-…", or without the prefix, as CUDA
        prints it): CUDA's numbering follows CUDA_VISIBLE_DEVICES, NVML's does not."""
        wanted = uuid.removeprefix("GPU-").lower()
        for dev in self._devices:
            if wanted and dev.info.uuid.removeprefix("GPU-").lower() == wanted:
                return dev.index
        return None

    def energy_joules(self, index: int) -> float | None:
        """The GPU's cumulative energy counter in joules, or None where NVML cannot give it.
        A blocking read (~3 ms on the H200): for the worker's case boundaries, not a tick."""
        dev = self._devices[index]
        if dev.state != "ok":
            return None
        millijoules = self._quiet("nvmlDeviceGetTotalEnergyConsumption", dev.handle)
        return millijoules / 1000 if millijoules is not None else None

    # --- for inventory readers in their own modules (telemetry/topology.py) --------------------

    def opened(self, index: int) -> tuple[Any, list[int]] | None:
        """The handle and active NVLink links of a GPU that opened and is not lost."""
        dev = self._devices[index]
        return (dev.handle, list(dev.active_links)) if dev.state == "ok" else None

    def ask(self, name: str, *args: Any) -> Any:
        """One NVML call through the gateway (and its hang watch); Unanswered says why not."""
        try:
            return self._call(name, *args)
        except (_Missing, self._nvml.NVMLError) as exc:
            raise Unanswered(str(exc)) from exc

    def wait_event(self, event_set: Any, timeout_ms: int) -> Any | None:
        """nvmlEventSetWait: the next event of the set, or None when none came within the
        timeout; Unanswered when the wait itself failed. For a thread of its own (xid.py)."""
        try:
            return self._call("nvmlEventSetWait", event_set, timeout_ms)
        except (_Missing, self._nvml.NVMLError) as exc:
            if self._is(exc, "NVMLError_Timeout"):
                return None
            raise Unanswered(str(exc)) from exc

    # --- errors ------------------------------------------------------------------------------

    def _call(self, name: str, *args: Any) -> Any:
        function = getattr(self._nvml, name, None)
        if function is None:
            raise _Missing(f"{name} is not in this nvidia-ml-py")
        return self._invoke(name, function, *args)

    def _invoke(self, name: str, function: Callable[..., Any], *args: Any) -> Any:
        """`function` (NVML's `name`) under the hang watch, its failures counted."""
        slot = self.watch.calling(name)
        try:
            return function(*args)
        except self._nvml.NVMLError as exc:
            self._count(name, exc)
            raise
        finally:
            self.watch.returned(slot)

    def _count(self, name: str, exc: BaseException) -> None:
        """A failed call of `name`, counted unless the GPU does not support it."""
        if self._kind(exc) != "unsupported":
            self.errors[name] += 1

    def _quiet(self, name: str, *args: Any) -> Any:
        """For the inventory: the answer, or None when NVML cannot give it."""
        try:
            return self._call(name, *args)
        except (_Missing, self._nvml.NVMLError):
            return None

    def _failed(self, dev: _Device, group: str, exc: BaseException) -> None:
        kind = self._kind(exc)
        if kind == "unsupported":
            dev.unsupported.add(group)
        elif kind == "lost":
            dev.state = "lost"
            self._any_lost = True
            log.warning("GPU %d is lost: %s", dev.index, exc)

    def _kind(self, exc: BaseException) -> str:
        """'unsupported' (never ask again), 'lost' (the GPU is gone) or 'error' (this tick)."""
        if isinstance(exc, _Missing):
            return "unsupported"
        if self._is(exc, "NVMLError_NotSupported", "NVMLError_FunctionNotFound"):
            return "unsupported"
        if self._is_lost(exc):
            return "lost"
        return "error"

    def _is_lost(self, exc: BaseException) -> bool:
        # Once a GPU is lost, NVML may answer Uninitialized for it rather than GpuIsLost.
        if self._any_lost and self._is(exc, "NVMLError_Uninitialized"):
            return True
        return self._is(exc, "NVMLError_GpuIsLost")

    def _is(self, exc: BaseException, *names: str) -> bool:
        classes = [getattr(self._nvml, name, None) for name in names]
        return any(cls is not None and isinstance(exc, cls) for cls in classes)


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
