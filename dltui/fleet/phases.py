"""Benchmark phases: each timed case of a job, with the telemetry seen while it ran.

A case starts at a `progress` frame with a new `done` and ends at its `result` frame. The
tracker learns both as frames arrive, so the live TUI marks phases on its charts and a report
finds them in a recording the same way; the caller says what time each frame is at (the
fleet: its latest sample of that server; a recording: the receive time). Those times place a
case among the samples; how long it ran is what its result says the worker timed, where it
says: a short case's start and result can reach a client together, at one time.

While a phase is open, every sample of its server is folded into it (a few additions), so its
means cost nothing to read: utilization and tensor activity averaged over the GPUs the case
used, power, PCIe and NVLink summed over them, and, where the energy counter moved at least
twice inside the phase, the mean power it implies (more exact than sampled power, but read
only every 5 s, so long phases only).

A training run's case also holds what its measurement leaves out: building the model,
compiling it (a minute and more with `torch.compile`) and the warm-up steps, at a fraction of
the power the timed steps draw. So when its result comes, the phase is narrowed to its timed
steps (the result's time minus the sum of its step times), and its telemetry, images/s per watt
above all, is of those steps. An open phase keeps its samples for that, and lets them go when
it ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dltui.plans import formulas
from dltui.plans.names import COLLECTIVES
from dltui.plans.scaling import throughput
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.protocol.fields import GPU_FIELDS
from dltui.protocol.messages import JobEnd, JobProgress, JobResult, Message, Sample
from dltui.protocol.samples import GpuSample

MEANS = ("util_gpu", "tensor_active")
"""Averaged over the GPUs a case used."""
SUMS = ("power", "pcie_tx", "pcie_rx", "nvlink_tx", "nvlink_rx")
"""Summed over the GPUs a case used."""

Result = KernelResult | ModelResult


@dataclass
class _Energy:
    """The first and latest change of one GPU's energy counter inside a phase."""

    first: tuple[float, float] | None = None
    last: tuple[float, float] | None = None
    value: float | None = None


@dataclass
class Phase:
    source: str
    job: str
    case: int
    """The job's `done` count when the case started: its index in the job."""
    label: str
    start: float
    end: float | None = None
    """None while the case runs."""
    result: Result | None = None
    seconds: float | None = None
    """How long the case ran, once it has ended: as timed where it ran (a kernel's `case_s`, a
    training run's timed steps), else between its frames; None where its start and end came
    at one time (a case shorter than a batch of frames: how long is unknown, not 0)."""
    _sums: dict[tuple[int, str], list[float]] = field(default_factory=dict, repr=False)
    _energy: dict[int, _Energy] = field(default_factory=dict, repr=False)
    _kept: list[tuple[float, list[GpuSample]]] = field(default_factory=list, repr=False)

    def add(self, t: float, gpus: list[GpuSample]) -> None:
        self._kept.append((t, gpus))
        self._fold(t, gpus)

    def readings_of(self, whole: Phase) -> None:
        """Take the readings of the same case seen whole (a replay that began inside it saw
        only its end); both have ended."""
        self._sums, self._energy = whole._sums, whole._energy

    def finish(self, t: float, result: Result | None = None) -> None:
        """End the phase at `t`, with its result if it has one; a training run's phase becomes
        its timed steps (see the module's docstring)."""
        self.end, self.result = t, result
        self.seconds = t - self.start if t > self.start else None
        if isinstance(result, KernelResult) and result.case_s is not None:
            self.seconds = result.case_s
        if isinstance(result, ModelResult) and result.step_times:
            self.seconds = sum(result.step_times)
            self.start = max(t - self.seconds, self.start)
            self._sums, self._energy = {}, {}
            for when, gpus in self._kept:
                if when >= self.start:
                    self._fold(when, gpus)
        self._kept = []

    def _fold(self, t: float, gpus: list[GpuSample]) -> None:
        for gpu in gpus:
            if gpu.state != "ok":
                continue
            values = gpu.values
            for name in (*MEANS, *SUMS):
                value = values.get(name)
                if value is not None:
                    total = self._sums.get((gpu.index, name))
                    if total is None:
                        self._sums[(gpu.index, name)] = [value, 1.0]
                    else:
                        total[0] += value
                        total[1] += 1.0
            energy = values.get("energy")
            if energy is not None:
                seen = self._energy.setdefault(gpu.index, _Energy())
                if seen.value is not None and energy != seen.value:
                    seen.first = seen.first or (t, energy)
                    seen.last = (t, energy)
                seen.value = energy

    def gpus(self) -> set[int]:
        """The GPUs the case ran on, as far as its result says (none for a case on the CPU);
        every GPU seen otherwise."""
        seen = {index for index, _ in self._sums} | set(self._energy)
        result = self.result
        if result is not None and result.device == "cpu":
            return set()  # the GPUs' idle readings are none of a CPU case's
        if isinstance(result, KernelResult) and result.kind not in COLLECTIVES:
            _, _, number = result.device.partition(":")
            if number.isdigit():
                return {int(number)} & seen
        if isinstance(result, ModelResult) and result.device == "cuda":
            per_server = max(result.gpus // max(result.servers, 1), 1)
            return set(sorted(seen)[:per_server])
        return seen

    def too_short(self, name: str) -> bool:
        """Whether the phase ended sooner than the field's readings average over (GPM: 1 s):
        what its samples carry was read before it began."""
        spec = GPU_FIELDS.get(name)
        if self.end is None or spec is None:
            return False
        return self.seconds is None or self.seconds < spec.window

    @property
    def telemetry(self) -> dict[str, float]:
        """Means over the phase (see the module's docstring); a field no sample gave, or
        that the phase was too short to sample, is absent."""
        used = self.gpus()
        out: dict[str, float] = {}
        for name in (*MEANS, *SUMS):
            if self.too_short(name):
                continue
            means = [s / n for (index, field_name), (s, n) in self._sums.items()
                     if field_name == name and index in used]  # fmt: skip
            if means:
                out[name] = sum(means) / len(means) if name in MEANS else sum(means)
        watts = []
        for index in used:
            energy = self._energy.get(index)
            if energy is None or energy.first is None or energy.last is None:
                break
            (t0, e0), (t1, e1) = energy.first, energy.last
            if t1 <= t0:
                break
            watts.append((e1 - e0) / (t1 - t0))
        else:
            if watts:
                out["energy_power"] = sum(watts)
        return out

    @property
    def watts(self) -> float | None:
        """Mean power of the GPUs the case used: from the energy counter where it moved enough,
        else from the sampled power."""
        telemetry = self.telemetry
        return telemetry.get("energy_power") or telemetry.get("power") or None

    @property
    def per_watt(self) -> float | None:
        """TFLOP/s per W for a compute kernel, from the energy its worker read across a
        sustained run (a case of milliseconds is far shorter than the telemetry's samples);
        images/s (tokens/s) per W for a training run, from the energy over its timed steps."""
        result, watts = self.result, self.watts
        if result is None or result.error is not None:
            return None
        if isinstance(result, KernelResult):
            return formulas.kernel_per_watt(result.tflops, result.median_s, result.sustained_s,
                                            result.energy_j, result.energy_s)  # fmt: skip
        rate = throughput(result)
        if watts is None or rate is None:
            return None
        return rate / watts

    @property
    def tflops_per_watt(self) -> float | None:
        return self.per_watt if isinstance(self.result, KernelResult) else None


class PhaseTracker:
    """Phases of every source, from frames in the order they arrived."""

    def __init__(self) -> None:
        self.phases: list[Phase] = []
        self.open: dict[str, Phase] = {}
        self._done: dict[tuple[str, str], int] = {}
        """(source, job) -> the `done` of the case that last started."""

    def observe(self, source: str, message: Message, t: float) -> Phase | None:
        """Take one frame at time `t`; the phase it started, if it started one."""
        if isinstance(message, Sample):
            phase = self.open.get(source)
            if phase is not None:
                phase.add(t, message.gpus)
        elif isinstance(message, JobProgress):
            key = (source, message.job)
            if self._done.get(key) != message.done:
                self._done[key] = message.done
                self._close(source, t)  # a case without a result ends unfinished
                if message.done >= message.total:
                    return None  # the job's last word: every case is done
                phase = Phase(source, message.job, message.done, message.label, t)
                self.open[source] = phase
                self.phases.append(phase)
                return phase
        elif isinstance(message, JobResult):
            phase = self.open.get(source)
            if phase is not None and phase.job == message.job:
                del self.open[source]
                phase.finish(t, message.result or message.model)
        elif isinstance(message, JobEnd):
            phase = self.open.get(source)
            if phase is not None and phase.job == message.job:
                self._close(source, t)
        return None

    def _close(self, source: str, t: float) -> None:
        phase = self.open.pop(source, None)
        if phase is not None:
            phase.finish(t)

    def finished(self) -> list[Phase]:
        """Phases that ended with their result, in the order they started."""
        return [phase for phase in self.phases if phase.result is not None]
