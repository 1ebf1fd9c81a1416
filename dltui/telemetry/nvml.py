"""The one gateway to NVML: nothing else in dltui imports pynvml.

NVML differs across GPUs, drivers and nvidia-ml-py releases, and it fails in many ways. This
module turns all of that into three outcomes per field: a value, absent (not supported, found
once per device and never asked again), or an error for this tick. A GPU that falls off the
bus becomes a sticky "lost" state while the others go on. Callers never see an NVML exception.

The gateway keeps the policy for every call (the hang watch, the error counts, what a failure
means) and opens and closes the GPUs; each GPU's reads and what they know of it are a
`GpuReader` (gpu_reader.py), and when each read is due is the sampler's schedule (schedule.py).

The NVML module is a constructor argument, so tests (and fault injection) hand in a fake. A
call that never returns marks its GPU hung through `watch` (see nvml_watch), so that it stalls
neither the other GPUs nor the agent.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from dltui.protocol.inventory import GpuInfo
from dltui.protocol.samples import GpuSample
from dltui.telemetry.gpu_reader import GpuReader, Missing
from dltui.telemetry.nvml_reads import INIT_REASONS
from dltui.telemetry.nvml_watch import CallWatch

log = logging.getLogger(__name__)


class Unanswered(Exception):
    """NVML could not answer a read (not supported, not in this nvidia-ml-py, failed); the
    message is NVML's reason."""


class NvmlGateway:
    """NVML behind a small interface: `open`, `readers` (one per GPU), `read_fast`, `close`.

    `read_fast` runs on the sampling thread and costs microseconds per GPU; the slow reads (GPM
    samples, the energy counter, milliseconds on the H200, the blocking PCIe call) are the
    readers', asked by the schedule on a thread of their own.
    """

    def __init__(self, nvml: Any | None = None):
        self.module: Any = nvml
        """pynvml (or a fake of it); None until `open` imports pynvml."""
        self._readers: list[GpuReader] = []
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
        self.failures: tuple[type[BaseException], ...] = (Missing,)
        """What an NVML call raises: NVML's errors (once the module is known), and Missing."""

    @property
    def count(self) -> int:
        return len(self._readers)

    @property
    def gpus(self) -> list[GpuInfo]:
        return [reader.info for reader in self._readers]

    @property
    def readers(self) -> list[GpuReader]:
        """One reader per GPU, by index; none before `open` or after `close`."""
        return self._readers

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
        if self.module is None:
            try:
                import pynvml
            except ImportError as exc:
                self.error = f"nvidia-ml-py is not installed: {exc}"
                return
            self.module = pynvml
        self.failures = (Missing, self.module.NVMLError)
        try:
            self.call("nvmlInit")
        except self.failures as exc:
            self.error = self._init_reason(exc)
            return
        self._initialized = True
        try:
            count = self.call("nvmlDeviceGetCount")
        except self.failures as exc:
            self.error = f"NVML cannot count the GPUs: {exc}"
            return
        self.driver_version = _text(self.quiet("nvmlSystemGetDriverVersion"))
        cuda = self.quiet("nvmlSystemGetCudaDriverVersion")
        if cuda:
            self.cuda_version = f"{cuda // 1000}.{cuda % 1000 // 10}"
        self._readers = [GpuReader.open(self, index) for index in range(count)]
        if not self._readers:
            self.error = "NVML found no GPUs"

    def close(self) -> None:
        """Free GPM samples and shut NVML down; afterwards the gateway reports no GPUs."""
        for reader in self._readers:
            reader.free()
        self._readers = []
        if self._initialized:
            self._initialized = False
            try:
                self.module.nvmlShutdown()
            except self.module.NVMLError as exc:
                log.debug("nvmlShutdown failed: %s", exc)

    def _init_reason(self, exc: BaseException) -> str:
        for name, reason in INIT_REASONS.items():
            if self.matches(exc, name):
                return reason
        return f"NVML failed to start: {exc}"

    # --- reads: each GPU's reader does them -----------------------------------------------

    def read_fast(self, held: frozenset[str] = frozenset()) -> list[GpuSample]:
        """One sample per GPU from the cheap counters; the groups in `held` carry their last
        values (the schedule says which: schedule.py)."""
        return [reader.read_fast(held) for reader in self._readers]

    # --- for the benchmark worker --------------------------------------------------------------

    def index_of(self, uuid: str) -> int | None:
        """The NVML index of the GPU with this UUID ("GPU-…", or without the prefix, as CUDA
        prints it): CUDA's numbering follows CUDA_VISIBLE_DEVICES, NVML's does not."""
        wanted = uuid.removeprefix("GPU-").lower()
        for reader in self._readers:
            if wanted and reader.info.uuid.removeprefix("GPU-").lower() == wanted:
                return reader.index
        return None

    def energy_joules(self, index: int) -> float | None:
        """The GPU's cumulative energy counter in joules, or None where NVML cannot give it.
        A blocking read (milliseconds): for the worker's case boundaries, not a tick."""
        return self._readers[index].energy_joules()

    # --- for inventory readers in their own modules (telemetry/topology.py) --------------------

    def opened(self, index: int) -> tuple[Any, list[int]] | None:
        """The handle and active NVLink links of a GPU that opened and is not lost."""
        reader = self._readers[index]
        return (reader.handle, list(reader.active_links)) if reader.state == "ok" else None

    def call_or_unanswered(self, name: str, *args: Any) -> Any:
        """One NVML call through the gateway (and its hang watch); Unanswered says why not."""
        try:
            return self.call(name, *args)
        except self.failures as exc:
            raise Unanswered(str(exc)) from exc

    def wait_event(self, event_set: Any, timeout_ms: int) -> Any | None:
        """nvmlEventSetWait: the next event of the set, or None when none came within the
        timeout; Unanswered when the wait itself failed. For a thread of its own (xid.py)."""
        try:
            return self.call("nvmlEventSetWait", event_set, timeout_ms)
        except self.failures as exc:
            if self.matches(exc, "NVMLError_Timeout"):
                return None
            raise Unanswered(str(exc)) from exc

    # --- the policy for every call (gpu_reader.Nvml) ---------------------------------------

    def call(self, name: str, *args: Any) -> Any:
        """NVML's `name`, under the hang watch, its failures counted; Missing when this
        nvidia-ml-py lacks it."""
        function = getattr(self.module, name, None)
        if function is None:
            raise Missing(f"{name} is not in this nvidia-ml-py")
        slot = self.watch.calling(name)
        try:
            return function(*args)
        except self.module.NVMLError as exc:
            self.count_failure(name, exc)
            raise
        finally:
            self.watch.returned(slot)

    def count_failure(self, name: str, exc: BaseException) -> None:
        """A failed call of `name`, counted unless the GPU does not support it."""
        if self.kind(exc) != "unsupported":
            self.errors[name] += 1

    def quiet(self, name: str, *args: Any) -> Any:
        """For the inventory: the answer, or None when NVML cannot give it."""
        try:
            return self.call(name, *args)
        except self.failures:
            return None

    def lost(self, index: int, exc: BaseException) -> None:
        """A GPU fell off the bus: from now on NVML's Uninitialized means lost too."""
        self._any_lost = True
        log.warning("GPU %d is lost: %s", index, exc)

    def kind(self, exc: BaseException) -> str:
        """'unsupported' (never ask again), 'lost' (the GPU is gone) or 'error' (this tick)."""
        if isinstance(exc, Missing):
            return "unsupported"
        if self.matches(exc, "NVMLError_NotSupported", "NVMLError_FunctionNotFound"):
            return "unsupported"
        # Once a GPU is lost, NVML may answer Uninitialized for it rather than GpuIsLost.
        if self._any_lost and self.matches(exc, "NVMLError_Uninitialized"):
            return "lost"
        if self.matches(exc, "NVMLError_GpuIsLost"):
            return "lost"
        return "error"

    def matches(self, exc: BaseException, *names: str) -> bool:
        """Whether `exc` is one of NVML's errors of these names."""
        classes = [getattr(self.module, name, None) for name in names]
        return any(cls is not None and isinstance(exc, cls) for cls in classes)


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    text: str | None = value  # nvidia-ml-py answers str, or bytes in older releases
    return text
