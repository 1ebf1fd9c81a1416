"""The report's PNG plots (matplotlib, imported only when a report is made).

Each function draws one figure from the sessions' phases and records, writes it to `path` and
says whether there was anything to draw. Throughput per kernel case; all-reduce bandwidth
against message size; training throughput per model and server; scaling curves against the
ideal line from the one-GPU figure, with the efficiency beside them; images/s per watt;
each recording's telemetry over time with its benchmark phases shaded; and per profiled model,
the what-if prediction per layout with the measured figure beside it.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from dltui.formatting import GB
from dltui.outfiles import Replacement
from dltui.plans.names import COLLECTIVES
from dltui.plans.scaling import configuration
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.protocol.messages import Sample
from dltui.recording.recorded import RecordedSession
from dltui.result_text import model_what, rate_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from dltui.recording.whatif import WhatIfView

KERNEL, ALLREDUCE, TRAINING = "#4c78a8", "#f58518", "#54a24b"


def _save(figure: Figure, path: Path) -> None:
    import matplotlib.pyplot as plt

    figure.tight_layout()
    with Replacement(path) as replacement:
        figure.savefig(replacement.path, dpi=110, bbox_inches="tight")  # long labels never cut
    plt.close(figure)


def kernels(session: RecordedSession) -> list[KernelResult]:
    return [result for _, result in session.kernel_phases()]


def plot_throughput(sessions: list[RecordedSession], path: Path) -> bool:
    """A bar per case on a log axis (a CPU's GFLOP/s beside a GPU's hundreds of TFLOP/s),
    each bar labelled with its figure."""
    import matplotlib.pyplot as plt

    cases = [(s.name, r, value) for s in sessions for r in kernels(s)
             if r.kind not in COLLECTIVES and (value := _throughput(r))]  # fmt: skip
    if not cases:
        return False
    figure, axis = plt.subplots(figsize=(10, 0.28 * len(cases) + 1.5))
    labels = [f"{name}: {r.kind} {r.shape} {r.direction} {r.precision}" for name, r, _ in cases]
    values = [value for _, _, value in cases]
    low, high = min(values) / 2, max(values) * 4  # room at the right for the last label
    axis.set_xscale("log")
    axis.barh(range(len(cases)), [value - low for value in values], left=low, color=KERNEL)
    for row, (_, result, value) in enumerate(cases):
        axis.text(value * 1.08, row, rate_text(result), va="center", fontsize=7)
    axis.set_xlim(low, high)
    axis.set_yticks(range(len(cases)), labels, fontsize=7)
    axis.invert_yaxis()
    axis.set_xlabel("TFLOP/s (bandwidth cases: TB/s), log scale")
    axis.set_title("Throughput per case")
    _save(figure, path)
    return True


def _throughput(result: KernelResult) -> float | None:
    """TFLOP/s, or TB/s for a case that moves data; None where it has neither (it failed)."""
    if result.error is not None:
        return None
    if result.tflops:
        return result.tflops
    return result.gbps / 1000 if result.gbps else None


def plot_allreduce(sessions: list[RecordedSession], path: Path) -> bool:
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 4.5))
    drawn = False
    for session in sessions:
        points = sorted((r.params.get("bytes", 0), r.busbw_gbps) for r in kernels(session)
                        if r.kind == "allreduce" and r.busbw_gbps)  # fmt: skip
        if points:
            drawn = True
            axis.plot([b for b, _ in points], [g for _, g in points], marker="o",
                      label=session.name)  # fmt: skip
    if drawn:
        axis.set_xscale("log")
        axis.set_xlabel("message size (bytes)")
        axis.set_ylabel("bus bandwidth (GB/s)")
        axis.set_title("All-reduce bus bandwidth against message size")
        axis.legend()
        _save(figure, path)
    plt.close(figure)
    return drawn


def plot_training(sessions: list[RecordedSession], path: Path) -> bool:
    """Images/s of every training run, per server."""
    import matplotlib.pyplot as plt

    runs = [(f"{s.name} {s.hostname(p.source)}: {model_what(r)}", r.images_per_s)
            for s in sessions for p, r in s.training_phases() if r.images_per_s]  # fmt: skip
    if not runs:
        return False
    figure, axis = plt.subplots(figsize=(10, 0.3 * len(runs) + 1.5))
    labels = [label for label, _ in runs]
    axis.barh(range(len(runs)), [rate for _, rate in runs], color=TRAINING)
    axis.set_yticks(range(len(runs)), labels, fontsize=7)
    axis.invert_yaxis()
    axis.set_xlabel("images/s (synthetic data)")
    axis.set_title("Training throughput per run")
    _save(figure, path)
    return True


def scaling_curves(sessions: list[RecordedSession]) -> dict[str, list[tuple[int, float]]]:
    """Per server and configuration, (GPUs, images/s) of its one-server runs, by GPUs."""
    curves: dict[tuple[object, ...], dict[int, float]] = defaultdict(dict)
    labels: dict[tuple[object, ...], str] = {}
    for session in sessions:
        for phase, result in session.training_phases():
            if result.images_per_s and result.servers == 1 and result.error is None:
                key = (session.name, phase.source, configuration(result))
                host = session.hostname(phase.source)
                labels[key] = (f"{session.name} {host}: {result.model} {result.precision} "
                               f"batch {result.batch}")  # fmt: skip
                curves[key][result.gpus] = result.images_per_s  # the latest run wins
    return {labels[key]: sorted(points.items()) for key, points in curves.items()}


def plot_scaling(sessions: list[RecordedSession], path: Path) -> bool:
    """Images/s against GPUs with the ideal line (the one-GPU figure times N), and the
    efficiency (measured over ideal) beside it."""
    import matplotlib.pyplot as plt

    curves = {label: points for label, points in scaling_curves(sessions).items()
              if len(points) > 1 and points[0][0] == 1}  # fmt: skip
    if not curves:
        return False
    figure, (rates, efficiency) = plt.subplots(1, 2, figsize=(11, 4.5))
    for index, (label, points) in enumerate(curves.items()):
        colour = f"C{index % 10}"
        gpus = [n for n, _ in points]
        one = points[0][1]
        rates.plot(gpus, [r for _, r in points], marker="o", color=colour, label=label)
        rates.plot(gpus, [one * n for n in gpus], linestyle="--", color=colour, alpha=0.6)
        efficiency.plot(gpus, [r / (one * n) * 100 for n, r in points], marker="o",
                        color=colour)  # fmt: skip
    counts = sorted({n for points in curves.values() for n, _ in points})
    for axis in (rates, efficiency):
        axis.set_xticks(counts)
        axis.set_xlabel("GPUs (CPU: processes)")
    rates.set_ylim(bottom=0)
    rates.set_ylabel("images/s")
    rates.set_title("Scaling: measured (solid) against ideal (dashed)")
    rates.legend(fontsize=7)
    efficiency.axhline(100, color="grey", linewidth=0.8, linestyle=":")
    efficiency.set_ylabel("scaling efficiency (%)")
    efficiency.set_ylim(bottom=0)
    efficiency.set_title("Efficiency: images/s over N × one GPU's")
    _save(figure, path)
    return True


def plot_per_watt(sessions: list[RecordedSession], path: Path) -> bool:
    """Images/s per watt drawn by the GPUs each run used, against GPUs."""
    import matplotlib.pyplot as plt

    series: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for session in sessions:
        for phase, result in session.training_phases():
            if phase.per_watt is not None:
                label = f"{session.name} {session.hostname(phase.source)}: {result.model}"
                series[label].append((result.gpus, phase.per_watt))
    if not series:
        return False
    figure, axis = plt.subplots(figsize=(8, 4.5))
    for label, points in series.items():
        points.sort()
        axis.plot([n for n, _ in points], [w for _, w in points], marker="o", label=label)
    axis.set_xticks(sorted({n for points in series.values() for n, _ in points}))
    axis.set_xlabel("GPUs")
    axis.set_ylabel("images/s per watt")
    axis.set_ylim(bottom=0)
    axis.set_title("Performance per watt (power of the GPUs each run used)")
    axis.legend(fontsize=7)
    _save(figure, path)
    return True


def plot_telemetry(session: RecordedSession, path: Path) -> bool:
    import matplotlib.pyplot as plt

    samples = [(r.received, r.message) for r in session.records if isinstance(r.message, Sample)]
    if not samples or not any(s.gpus for _, s in samples):
        return False
    start = samples[0][0]
    times = [t - start for t, _ in samples]

    def total(sample: Sample, name: str) -> float:
        return sum(gpu.values.get(name, 0.0) for gpu in sample.gpus)

    def mean(sample: Sample, name: str) -> float:
        values = [gpu.values[name] for gpu in sample.gpus if name in gpu.values]
        return sum(values) / len(values) if values else 0.0

    figure, axes = plt.subplots(3, 1, figsize=(10, 6), sharex=True)
    series = [
        ("power, all GPUs (W)", [total(s, "power") for _, s in samples]),
        ("tensor active, mean (%)", [mean(s, "tensor_active") for _, s in samples]),
        ("NVLink transmit, all GPUs (GB/s)", [total(s, "nvlink_tx") / GB for _, s in samples]),
    ]
    for axis, (label, values) in zip(axes, series, strict=True):
        axis.plot(times, values, linewidth=1.2)
        axis.set_ylabel(label, fontsize=8)
        for index, phase in enumerate(session.phases):
            result = phase.result
            colour = (TRAINING if isinstance(result, ModelResult) else ALLREDUCE
                      if isinstance(result, KernelResult) and result.kind == "allreduce"
                      else KERNEL)  # fmt: skip
            axis.axvspan(phase.start - start, (phase.end or phase.start) - start,
                         alpha=0.15 + 0.1 * (index % 2), color=colour, linewidth=0)  # fmt: skip
    axes[-1].set_xlabel("seconds since the recording began (shaded: benchmark phases)")
    axes[0].set_title(f"{session.name}: telemetry during the benchmarks")
    _save(figure, path)
    return True


def plot_whatif(view: WhatIfView, path: Path) -> bool:
    """Predicted images/s per layout, measured beside where the results hold it; and the
    predicted efficiency against one GPU."""
    import matplotlib.pyplot as plt

    rows = [row for row in view.table.rows if not row.prediction.missing]
    if not rows:
        return False
    labels = [str(row.prediction.layout) for row in rows]
    places = range(len(rows))
    figure, (rates, efficiency) = plt.subplots(1, 2, figsize=(11, 4.5))
    predicted = [row.prediction.images_per_s for row in rows]
    rates.bar([x - 0.2 for x in places], predicted, width=0.4, color=TRAINING, hatch="//",
              edgecolor="white", label="predicted")  # fmt: skip
    measured = [(x, row.measured_images_per_s) for x, row in zip(places, rows, strict=True)
                if row.measured_images_per_s]  # fmt: skip
    if measured:
        rates.bar([x + 0.2 for x, _ in measured], [rate for _, rate in measured], width=0.4,
                  color=KERNEL, label="measured")  # fmt: skip
    rates.set_yscale("log")
    rates.set_ylabel("images/s (log scale)")
    rates.set_title(f"{view.table.workload.model}: predicted images/s per layout")
    rates.legend(fontsize=8)
    efficiency.bar(places, [row.prediction.efficiency_vs_gpu * 100 for row in rows],
                   color=TRAINING, hatch="//", edgecolor="white")  # fmt: skip
    efficiency.axhline(100, color="grey", linewidth=0.8, linestyle=":")
    efficiency.set_ylim(0, 105)
    efficiency.set_ylabel("predicted efficiency vs one GPU (%)")
    efficiency.set_title(f"Predicted efficiency; between servers: {view.network_summary}",
                         fontsize=9)  # fmt: skip
    for axis in (rates, efficiency):
        axis.set_xticks(list(places), labels)
        axis.set_xlabel("servers × GPUs each")
    _save(figure, path)
    return True
