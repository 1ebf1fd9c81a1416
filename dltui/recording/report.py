"""`dltui report`: recordings turned into a Markdown and an HTML page with PNG plots.

Per server: what it is; per benchmark case: the figure, the ratio to the V100, and the
telemetry while the case ran (power, TFLOP/s per watt, utilization, tensor activity, NVLink);
plots of throughput per case and server, all-reduce bandwidth against message size, and each
recording's power, tensor activity and NVLink traffic over time with the cases marked.
"""

from __future__ import annotations

import html
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from dltui.bench.table import rate_text, ratio_text
from dltui.formatting import fmt_duration, fmt_rate
from dltui.protocol.messages import Inventory, Sample, Welcome
from dltui.recording.format import Header, Record
from dltui.recording.phases import Phase, phases
from dltui.recording.reader import RecordingReader


@dataclass
class Session:
    name: str
    header: Header
    records: list[Record]
    phases: list[Phase]

    def inventories(self) -> dict[str, Inventory]:
        return {r.source: r.message.inventory for r in self.records
                if isinstance(r.message, Welcome)}  # fmt: skip


def load(paths: list[Path]) -> list[Session]:
    sessions = []
    for path in paths:
        reader = RecordingReader(path)
        records = reader.read_all()
        if note := reader.damage_report():
            print(f"dltui report: {note}", file=sys.stderr)
        sessions.append(Session(path.stem, reader.header, records, phases(records)))
    return sessions


def _cell(value: float | None, text: str) -> str:
    return text if value is not None else "–"


def servers_table(sessions: list[Session]) -> list[list[str]]:
    rows = [["recording", "server", "host", "GPUs", "CPU", "driver", "recorded"]]
    for session in sessions:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(session.header.started))
        for source, inv in session.inventories().items():
            gpus = f"{len(inv.gpus)}× {inv.gpus[0].name}" if inv.gpus else "none"
            cpu = f"{inv.cpu_model} × {inv.cpu_count}"
            rows.append([session.name, source, inv.hostname, gpus, cpu, inv.driver_version or "–",
                         when])  # fmt: skip
    return rows


def results_table(sessions: list[Session]) -> list[list[str]]:
    rows = [["recording", "case", "pass", "prec", "median", "rate", "vs V100", "power",
             "TFLOP/s per W", "util", "tensor", "NVLink"]]  # fmt: skip
    for session in sessions:
        for phase in session.phases:
            r, t = phase.result, phase.telemetry
            if r.error is not None:
                rows.append([session.name, f"{r.kind} {r.shape}", r.direction, r.precision,
                             "error", r.error, "", "", "", "", "", ""])  # fmt: skip
                continue
            per_watt = phase.tflops_per_watt
            rows.append([
                session.name, f"{r.kind} {r.shape}", r.direction, r.precision,
                fmt_duration(r.median_s), rate_text(r), ratio_text(r),
                _cell(t.get("power"), f"{t.get('power', 0):.0f} W"),
                _cell(per_watt, f"{per_watt or 0:.3f}"),
                _cell(t.get("util_gpu"), f"{t.get('util_gpu', 0):.0f}%"),
                _cell(t.get("tensor_active"), f"{t.get('tensor_active', 0):.0f}%"),
                _cell(t.get("nvlink_tx"), fmt_rate(t.get("nvlink_tx", 0))),
            ])  # fmt: skip
    return rows


def markdown_table(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * len(rows[0])]
    lines += ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in rows[1:]]
    return "\n".join(lines)


def html_table(rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(cell)}</th>" for cell in rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
        for row in rows[1:]
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def plot_throughput(sessions: list[Session], path: Path) -> bool:
    import matplotlib.pyplot as plt

    cases = [(s.name, p.result) for s in sessions for p in s.phases
             if p.result.error is None and p.result.kind != "allreduce"]  # fmt: skip
    if not cases:
        return False
    figure, axis = plt.subplots(figsize=(10, 0.28 * len(cases) + 1.5))
    labels = [f"{name}: {r.kind} {r.shape} {r.direction} {r.precision}" for name, r in cases]
    values = [r.tflops if r.tflops is not None else (r.gbps or 0) / 1000 for _, r in cases]
    axis.barh(range(len(cases)), values, color="#4c78a8")
    axis.set_yticks(range(len(cases)), labels, fontsize=7)
    axis.invert_yaxis()
    axis.set_xlabel("TFLOP/s (bandwidth cases: TB/s)")
    axis.set_title("Throughput per case")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


def plot_allreduce(sessions: list[Session], path: Path) -> bool:
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 4.5))
    drawn = False
    for session in sessions:
        points = sorted((p.result.params.get("bytes", 0), p.result.busbw_gbps)
                        for p in session.phases
                        if p.result.kind == "allreduce" and p.result.busbw_gbps)  # fmt: skip
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
        figure.tight_layout()
        figure.savefig(path, dpi=110)
    plt.close(figure)
    return drawn


def plot_telemetry(session: Session, path: Path) -> bool:
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
        ("NVLink transmit, all GPUs (GB/s)", [total(s, "nvlink_tx") / 1e9 for _, s in samples]),
    ]
    for axis, (label, values) in zip(axes, series, strict=True):
        axis.plot(times, values, linewidth=1.2)
        axis.set_ylabel(label, fontsize=8)
        for index, phase in enumerate(session.phases):
            colour = "#f58518" if phase.result.kind == "allreduce" else "#4c78a8"
            axis.axvspan(phase.start - start, phase.end - start, alpha=0.15 + 0.1 * (index % 2),
                         color=colour, linewidth=0)  # fmt: skip
    axes[-1].set_xlabel("seconds since the recording began (shaded: benchmark cases)")
    axes[0].set_title(f"{session.name}: telemetry during the benchmarks")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


def write_report(paths: list[Path], out: Path) -> Path:
    """Write index.md, index.html and the plots into `out`; return the Markdown file."""
    import matplotlib

    matplotlib.use("Agg")
    sessions = load(paths)
    out.mkdir(parents=True, exist_ok=True)
    plots = []
    if plot_throughput(sessions, out / "throughput.png"):
        plots.append(("Throughput per case", "throughput.png"))
    if plot_allreduce(sessions, out / "allreduce.png"):
        plots.append(("All-reduce bandwidth", "allreduce.png"))
    for session in sessions:
        name = f"telemetry-{session.name}.png"
        if plot_telemetry(session, out / name):
            plots.append((f"{session.name}: telemetry", name))
    servers, results = servers_table(sessions), results_table(sessions)
    note = ("Telemetry per case is the mean of the samples received while it ran; cases "
            "shorter than a sampling interval (0.1 s, GPM 0.5 s) have few or none.")  # fmt: skip
    title = "dltui report: " + ", ".join(session.name for session in sessions)
    markdown = [f"# {title}", "", "## Servers", "", markdown_table(servers), "",
                "## Results", "", note, "", markdown_table(results), ""]  # fmt: skip
    markdown += [f"## {caption}\n\n![{caption}]({file})\n" for caption, file in plots]
    (out / "index.md").write_text("\n".join(markdown))
    figures = "".join(
        f"<h2>{html.escape(caption)}</h2><img src='{file}' alt='{html.escape(caption)}'>"
        for caption, file in plots
    )
    page = (
        "<!doctype html><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;"
        "font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
        "td:first-child,td:nth-child(2){text-align:left}img{max-width:100%}</style>"
        f"<h1>{html.escape(title)}</h1><h2>Servers</h2>{html_table(servers)}"
        f"<h2>Results</h2><p>{html.escape(note)}</p>{html_table(results)}{figures}"
    )
    (out / "index.html").write_text(page)
    return out / "index.md"
