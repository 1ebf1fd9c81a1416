"""Prometheus names for what an agent measures, defined once: the agent's live `/metrics`
endpoint and the OpenMetrics export of recordings both turn frames into points here, so a
series has the same name and labels whether it was scraped or imported.

Names end in their unit, in Prometheus's base units (bytes, seconds, joules, hertz, ratios of
0–1); cumulative counts are counters (their samples end in `_total`), everything else is a
gauge. A field a GPU does not support has no point (absent, not 0); a GPU NVML lost, or whose
call hung, is `dltui_gpu_up 0` with no other point.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.protocol.fields import GPU_FIELDS, HOST_FIELDS, THROTTLE_REASONS, FieldSpec
from dltui.protocol.inventory import GpuInfo
from dltui.protocol.messages import JobProgress, Sample

Kind = Literal["gauge", "counter"]

HOST_LABELS = ("hostname",)
GPU_LABELS = ("hostname", "gpu", "uuid", "name")
BENCH_LABELS = ("hostname", "kind", "case", "direction", "precision", "framework", "device",
                "gpus")  # fmt: skip
TRAIN_LABELS = ("hostname", "case", "precision", "framework", "device", "gpus", "servers")


@dataclass(frozen=True, slots=True)
class MetricSpec:
    name: str
    """The family's name, its unit last; a counter's samples add `_total`."""
    kind: Kind
    help: str
    labels: tuple[str, ...]
    unit: str = ""
    scale: float = 1.0
    """A field's value times this is the metric's (percent to ratio, MHz to hertz)."""

    @property
    def sample_name(self) -> str:
        return f"{self.name}_total" if self.kind == "counter" else self.name


Point = tuple[MetricSpec, tuple[str, ...], float]
"""A metric, its label values (in `spec.labels` order) and its value."""


# A field's unit -> its Prometheus unit, and what turns the field's value into it.
PROMETHEUS_UNITS: dict[str, tuple[str, float]] = {
    "%": ("ratio", 0.01),
    "B": ("bytes", 1.0),
    "B/s": ("bytes_per_second", 1.0),
    "W": ("watts", 1.0),
    "J": ("joules", 1.0),
    "°C": ("celsius", 1.0),
    "MHz": ("hertz", 1e6),
    "": ("", 1.0),
}


def _field_metric(scope: str, field: FieldSpec) -> MetricSpec | None:
    if field.metric is None:
        return None
    unit, scale = PROMETHEUS_UNITS[field.unit]
    name = f"dltui_{scope}_{field.metric}" + (f"_{unit}" if unit else "")
    labels = GPU_LABELS if scope == "gpu" else HOST_LABELS
    return MetricSpec(name, field.kind, field.label, labels, unit, scale)


_derived: dict[str, tuple[int, dict[str, MetricSpec]]] = {}


def field_metrics(scope: Literal["gpu", "host"]) -> dict[str, MetricSpec]:
    """Field -> its metric, for every field of the scope that has one, derived from the specs
    once (again when a field is added): a scrape looks up every field of every GPU."""
    table = GPU_FIELDS if scope == "gpu" else HOST_FIELDS
    derived = _derived.get(scope)
    if derived is None or derived[0] != len(table):
        metrics = {name: m for name, spec in table.items()
                   if (m := _field_metric(scope, spec)) is not None}  # fmt: skip
        derived = _derived[scope] = (len(table), metrics)
    return derived[1]


GPU_UP = MetricSpec("dltui_gpu_up", "gauge", "1 while NVML answers for this GPU; 0 once it is "
                    "lost, or while a call to it has not returned", GPU_LABELS)  # fmt: skip
THROTTLE = MetricSpec("dltui_gpu_throttle_reason", "gauge", "1 while NVML reports this clock "
                      "throttle reason", (*GPU_LABELS, "reason"))  # fmt: skip

BENCH_TFLOPS = MetricSpec("dltui_bench_tflops", "gauge", "the latest result of a benchmark "
                          "case, TFLOP/s", BENCH_LABELS)  # fmt: skip
BENCH_GBPS = MetricSpec("dltui_bench_gbps", "gauge", "the latest result of a benchmark case, "
                        "GB/s (algorithm bandwidth)", BENCH_LABELS)  # fmt: skip
TRAIN_IMAGES = MetricSpec("dltui_train_images_per_second", "gauge", "the latest training "
                          "throughput of a model, images/s over every GPU of the run",
                          TRAIN_LABELS)  # fmt: skip
TRAIN_TOKENS = MetricSpec("dltui_train_tokens_per_second", "gauge", "the latest training "
                          "throughput of a GPT model, tokens/s over every GPU of the run",
                          TRAIN_LABELS)  # fmt: skip
TRAIN_MFU = MetricSpec("dltui_train_mfu_ratio", "gauge", "the latest model FLOPs utilisation "
                       "of a GPT model's training (0-1), over the GPUs' dense 16-bit peak",
                       TRAIN_LABELS)  # fmt: skip

EVENTS = MetricSpec("dltui_events", "counter", "health events and alerts since the agent "
                    "started, by kind and severity (a condition counts once, when raised)",
                    (*HOST_LABELS, "kind", "severity"))  # fmt: skip
CONDITION_UP = MetricSpec("dltui_condition_up", "gauge", "1 while a health condition or an "
                          "alert rule is raised and not resolved",
                          (*HOST_LABELS, "gpu", "kind", "rule", "severity"))  # fmt: skip

JOB_RUNNING = MetricSpec("dltui_job_running", "gauge", "1 while a benchmark job runs",
                         HOST_LABELS)  # fmt: skip
JOB_CASES_DONE = MetricSpec("dltui_job_cases_done", "gauge", "cases the running job has "
                            "finished", HOST_LABELS)  # fmt: skip
JOB_CASES = MetricSpec("dltui_job_cases", "gauge", "cases in the running job", HOST_LABELS)
JOB_PROGRESS = MetricSpec("dltui_job_progress_ratio", "gauge", "how far the running job is, 0 to 1",
                          HOST_LABELS, "ratio")  # fmt: skip
JOBS_ENDED = MetricSpec("dltui_jobs_ended", "counter", "benchmark jobs ended since the agent "
                        "started, by how they ended", (*HOST_LABELS, "state"))  # fmt: skip

AGENT_INFO = MetricSpec("dltui_agent_info", "gauge", "the agent's version and the GPU driver "
                        "it found", (*HOST_LABELS, "version", "driver", "cuda"))  # fmt: skip
AGENT_CLIENTS = MetricSpec("dltui_agent_clients", "gauge", "clients logged in", HOST_LABELS)
AGENT_DROPPED = MetricSpec("dltui_agent_samples_dropped", "counter", "samples dropped for a "
                           "client that read too slowly", (*HOST_LABELS, "client"))  # fmt: skip
AGENT_NVML_ERRORS = MetricSpec("dltui_agent_nvml_errors", "counter", "NVML calls that failed "
                               "(not counting fields a GPU does not support)",
                               (*HOST_LABELS, "call"))  # fmt: skip
AGENT_LAG = MetricSpec("dltui_agent_sampling_lag_seconds", "gauge", "how late the last sample "
                       "was taken against its schedule", HOST_LABELS, "seconds")  # fmt: skip
AGENT_MISSED = MetricSpec("dltui_agent_samples_missed", "counter", "samples skipped because "
                          "the sampling loop ran late", HOST_LABELS)  # fmt: skip
AGENT_RATE = MetricSpec("dltui_agent_sampling_rate_hertz", "gauge", "samples taken per second "
                        "now: what the clients and scrapers need, up to --rate", HOST_LABELS,
                        "hertz")  # fmt: skip
# The process's own figures under the names prometheus-client's ProcessCollector gives them,
# so dashboards made for other Python exporters read them too; without labels, as there.
PROCESS_CPU = MetricSpec("process_cpu_seconds", "counter", "Total user and system CPU time "
                         "spent in seconds.", (), "seconds")  # fmt: skip
PROCESS_RSS = MetricSpec("process_resident_memory_bytes", "gauge", "Resident memory size in "
                         "bytes.", (), "bytes")  # fmt: skip
AGENT_SAMPLE_AGE = MetricSpec("dltui_agent_sample_age_seconds", "gauge", "age of the sample "
                              "this scrape was served from", HOST_LABELS, "seconds")  # fmt: skip


def gpu_labels(hostname: str, index: int, info: GpuInfo | None) -> tuple[str, str, str, str]:
    """A GPU's label values (GPU_LABELS), from the inventory the agent gave."""
    if info is None:
        return hostname, str(index), "", ""
    return hostname, str(index), info.uuid, info.name


def sample_points(
    sample: Sample, hostname: str, gpu_label_values: Mapping[int, tuple[str, ...]]
) -> Iterator[Point]:
    """Every point of one sample: the host's fields, then each GPU's `up` and fields."""
    host = (hostname,)
    host_metrics, gpu_metrics = field_metrics("host"), field_metrics("gpu")
    for field, value in sample.host.values.items():
        spec = host_metrics.get(field)
        if spec is not None:
            yield spec, host, value * spec.scale
    for gpu in sample.gpus:
        labels = gpu_label_values.get(gpu.index) or (hostname, str(gpu.index), "", "")
        yield GPU_UP, labels, 1.0 if gpu.state == "ok" else 0.0
        for field, value in gpu.values.items():
            spec = gpu_metrics.get(field)
            if spec is not None:
                yield spec, labels, value * spec.scale
            elif field == "throttle":
                mask = int(value)
                for bit, words in THROTTLE_REASONS.items():
                    yield THROTTLE, (*labels, words), 1.0 if mask & bit else 0.0


def kernel_points(hostname: str, result: KernelResult) -> Iterator[Point]:
    """A benchmark case's rates (none for a case that failed)."""
    if result.error is not None:
        return
    gpus = str(result.params.get("ranks", 1 if result.device != "cpu" else 0))
    labels = (hostname, result.kind, result.shape, result.direction, result.precision,
              result.framework, result.device, gpus)  # fmt: skip
    if result.tflops is not None:
        yield BENCH_TFLOPS, labels, result.tflops
    if result.gbps is not None:
        yield BENCH_GBPS, labels, result.gbps


def model_points(hostname: str, result: ModelResult) -> Iterator[Point]:
    """A training run's throughput, and a GPT run's MFU where its GPU's peak is known (none for
    a run that failed or was timed to accuracy)."""
    if result.error is not None:
        return
    labels = (hostname, result.model, result.precision, result.framework, result.device,
              str(result.gpus), str(result.servers))  # fmt: skip
    if result.images_per_s is not None:
        yield TRAIN_IMAGES, labels, result.images_per_s
    if result.tokens_per_s is not None:
        yield TRAIN_TOKENS, labels, result.tokens_per_s
    if result.mfu is not None:
        yield TRAIN_MFU, labels, result.mfu


def progress_points(hostname: str, progress: JobProgress | None) -> Iterator[Point]:
    """The running job's progress; `None`: no job runs."""
    host = (hostname,)
    yield JOB_RUNNING, host, 0.0 if progress is None else 1.0
    if progress is None:
        return
    yield JOB_CASES_DONE, host, float(progress.done)
    yield JOB_CASES, host, float(progress.total)
    if progress.total > 0:
        ratio = (min(progress.done, progress.total) + (progress.fraction or 0.0)) / progress.total
        yield JOB_PROGRESS, host, min(ratio, 1.0)


RESULT_SPECS = (BENCH_TFLOPS, BENCH_GBPS, TRAIN_IMAGES, TRAIN_TOKENS, TRAIN_MFU)
JOB_SPECS = (JOB_RUNNING, JOB_CASES_DONE, JOB_CASES, JOB_PROGRESS)
AGENT_SPECS = (AGENT_INFO, AGENT_CLIENTS, AGENT_DROPPED, AGENT_NVML_ERRORS, AGENT_LAG,
               AGENT_MISSED, AGENT_RATE, AGENT_SAMPLE_AGE, JOBS_ENDED, PROCESS_CPU,
               PROCESS_RSS)  # fmt: skip


def all_specs() -> tuple[MetricSpec, ...]:
    """Every metric dltui writes, telemetry first, in the order an export lists them."""
    host, gpu = field_metrics("host").values(), field_metrics("gpu").values()
    telemetry = (*host, GPU_UP, *gpu, THROTTLE)
    return (*telemetry, *RESULT_SPECS, *JOB_SPECS, *AGENT_SPECS)
