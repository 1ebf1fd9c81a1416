"""`dltui report`: recordings turned into a Markdown and an HTML page with PNG plots.

Per server: what it is, and how it is wired beside what it measured over its links
(wiring.py); how healthy each GPU was, and every health event and alert (health_report.py).
Per kernel case: the figure, the ratio to the V100, and the telemetry while it ran (power,
TFLOP/s per watt, utilization, tensor activity, NVLink). Per training run: images/s, the
scaling efficiency against the same server's one-GPU (and one-server) run, the power of the
GPUs it used and images/s per watt. Per model profiled on one GPU: what-if, the predicted
images/s and efficiency of layouts of servers × GPUs beside what was measured
(whatif_report.py). Plots (plots.py): throughput, all-reduce bandwidth,
training throughput, scaling curves against ideal with the efficiency, performance per watt,
and each recording's telemetry over time with the benchmark phases shaded.
"""

from __future__ import annotations

import html
import re
import time
from pathlib import Path

from dltui.foreign_text import shown
from dltui.formatting import GB, fmt_duration, fmt_ratio, significant
from dltui.outfiles import write_text
from dltui.plans.scaling import scaling, throughput
from dltui.recording import plots
from dltui.recording.health_report import events_table, health_table
from dltui.recording.reader import Say
from dltui.recording.recorded import RecordedSession, load
from dltui.recording.whatif_report import whatif_charts, whatif_html, whatif_markdown, whatif_views
from dltui.recording.wiring import ServerWiring, server_wirings
from dltui.result_text import (
    device_text,
    images_text,
    link_text,
    method_text,
    model_what,
    percent,
    ratio_text,
)

NOTE = ("Telemetry per case is the mean of the samples received while it ran, over the GPUs it "
        "used; a case shorter than what a field's readings average over (utilization 0.2 s, "
        "GPM and link rates 1 s) shows – for it. "
        "Power is the energy counter's where it moved twice inside the case, else the sampled "
        "power. A kernel's TFLOP/s per W comes from the energy its worker read across a "
        "sustained run (dltui bench kernels --energy), never from a case's own milliseconds; "
        "± is the spread, 'timed' how (graph: CUDA graph replays). Efficiency is images/s "
        "over N times the same server's one-GPU figure (one-server figure across "
        "servers).")  # fmt: skip
WIRING_NOTE = ("Each cell: the link from the row's GPU to the column's as nvidia-smi topo -m "
               "names it (NV#: NVLink links; PIX: one PCIe switch; PXB: several; PHB: a CPU's "
               "host bridge; NODE: across host bridges of one NUMA node; SYS: across CPU "
               "sockets), then the GB/s a peer copy measured from row to column, where one "
               "did. Nominal rates are each way.")  # fmt: skip


def servers_table(sessions: list[RecordedSession]) -> list[list[str]]:
    rows = [["recording", "server", "host", "GPUs", "CPU", "driver", "recorded"]]
    for session in sessions:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(session.header.started))
        for source, inv in session.inventories().items():
            gpus = f"{len(inv.gpus)}× {inv.gpus[0].name}" if inv.gpus else "none"
            cpu = f"{inv.cpu_model} × {inv.cpu_count}"
            rows.append([session.name, source, inv.hostname, gpus, cpu, inv.driver_version or "–",
                         when])  # fmt: skip
    return rows


def _number(value: float | None, digits: int = 4) -> str:
    return significant(value, digits) if value is not None else "–"


def results_table(sessions: list[RecordedSession]) -> list[list[str]]:
    """A row per timed case; one unit per column, named in its heading."""
    rows = [["recording", "host", "case", "pass", "prec", "device", "median", "±", "timed",
             "TFLOP/s", "GB/s", "vs V100", "power W", "TFLOP/s per W", "util %", "tensor %",
             "NVLink GB/s",
             "of link"]]  # fmt: skip
    for session in sessions:
        for phase, r in session.kernel_phases():
            t, host = phase.telemetry, session.hostname(phase.source)
            if r.error is not None:
                rows.append([session.name, host, f"{r.kind} {r.shape}", r.direction, r.precision,
                             device_text(r.device), "error", r.error, *[""] * 10])  # fmt: skip
                continue
            spread = r.spread_s / r.median_s if r.median_s else 0.0
            nvlink = t.get("nvlink_tx")
            rows.append([
                session.name, host, f"{r.kind} {r.shape}", r.direction, r.precision,
                device_text(r.device), fmt_duration(r.median_s), f"{spread:.1%}", method_text(r),
                _number(r.tflops) if r.tflops is not None else "",
                _number(r.gbps) if r.gbps is not None else "",
                ratio_text(r), _number(phase.watts, 3), _number(phase.tflops_per_watt, 3),
                _number(t.get("util_gpu"), 2), _number(t.get("tensor_active"), 2),
                _number(nvlink / GB if nvlink is not None else None, 3), link_text(r),
            ])  # fmt: skip
    return rows


def training_table(sessions: list[RecordedSession]) -> list[list[str]]:
    rows = [["recording", "host", "run", "GPUs", "framework", "device", "images or tokens/s",
             "±", "MFU", "vs 1 GPU", "vs 1 server", "power W", "per W", "util %", "tensor %",
             "reference"]]  # fmt: skip
    for session in sessions:
        runs = session.training_phases()
        efficiencies = scaling([(p.source, r) for p, r in runs])
        for (phase, r), efficiency in zip(runs, efficiencies, strict=True):
            t = phase.telemetry
            host = session.hostname(phase.source)
            if r.error is not None:
                rows.append([session.name, host, model_what(r), r.placement or "–", r.framework,
                             r.device, "error", r.error, *[""] * 8])  # fmt: skip
                continue
            per_watt, watts = phase.per_watt, phase.watts
            reference = ""
            if r.reference_images_per_s and r.images_per_s:
                reference = (f"{fmt_ratio(r.images_per_s / r.reference_images_per_s)} "
                             f"{r.reference or ''}").strip()  # fmt: skip
            rows.append([
                session.name, host, model_what(r), r.placement or "–", r.framework, r.device,
                images_text(throughput(r)), images_text(r.spread),
                percent(r.mfu) or "–", percent(efficiency.vs_one_gpu) or "–",
                percent(efficiency.vs_one_server) or "–",
                _number(watts, 3), _number(per_watt, 3), _number(t.get("util_gpu"), 2),
                _number(t.get("tensor_active"), 2), reference,
            ])  # fmt: skip
    return rows


_MARKDOWN = str.maketrans({"\\": "\\\\", "|": "\\|", "`": "\\`", "[": "\\[", "]": "\\]",
                           "<": "&lt;", ">": "&gt;", "&": "&amp;"})  # fmt: skip


def markdown_text(text: str) -> str:
    """Text as Markdown shows it, never as markup: one line (foreign text: controls and line
    breaks visible), no table cell's edge, no link, no code span, no HTML."""
    return shown(text).translate(_MARKDOWN)


def markdown_table(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(map(markdown_text, rows[0])) + " |", "|" + " --- |" * len(rows[0])]
    lines += ["| " + " | ".join(map(markdown_text, row)) + " |" for row in rows[1:]]
    return "\n".join(lines)


def _fence(lines: list[str]) -> str:
    """A code fence longer than any run of backticks in `lines`: they cannot close it."""
    longest = max((len(run) for line in lines for run in re.findall("`+", line)), default=0)
    return "`" * max(3, longest + 1)


def html_table(rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(cell)}</th>" for cell in rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
        for row in rows[1:]
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def wiring_markdown(wirings: list[ServerWiring]) -> list[str]:
    lines = ["## How each server is wired, and what it measured over it", "", WIRING_NOTE, ""]
    for wiring in wirings:
        fence = _fence(wiring.lines)
        lines += [
            f"### {markdown_text(wiring.title)}",
            "",
            f"{fence}text",
            *wiring.lines,
            fence,
            "",
        ]
        if wiring.matrix:
            lines += [markdown_table(wiring.matrix), ""]
        if wiring.peers:
            lines += ["Peer copies against their links:", ""]
            lines += [f"- {markdown_text(peer)}" for peer in wiring.peers] + [""]
        if wiring.allreduce:
            lines += ["All-reduce, largest size:", "", markdown_table(wiring.allreduce), ""]
    return lines


def wiring_html(wirings: list[ServerWiring]) -> str:
    """Per server, its wiring on the left and what it measured on the right."""
    parts = ["<h2>How each server is wired, and what it measured over it</h2>",
             f"<p>{html.escape(WIRING_NOTE)}</p>"]  # fmt: skip
    for wiring in wirings:
        left = f"<pre>{html.escape(chr(10).join(wiring.lines))}</pre>"
        left += html_table(wiring.matrix) if wiring.matrix else ""
        right = ""
        if wiring.peers:
            items = "".join(f"<li>{html.escape(peer)}</li>" for peer in wiring.peers)
            right += f"<h4>Peer copies against their links</h4><ul>{items}</ul>"
        if wiring.allreduce:
            right += f"<h4>All-reduce, largest size</h4>{html_table(wiring.allreduce)}"
        parts.append(f"<h3>{html.escape(wiring.title)}</h3>"
                     f"<div class='side'><div>{left}</div><div>{right}</div></div>")  # fmt: skip
    return "".join(parts)


def _plots(sessions: list[RecordedSession], out: Path) -> list[tuple[str, str]]:
    """(caption, file) of every plot there was something to draw for."""
    made = []
    for caption, name, draw in (
        ("Throughput per case", "throughput.png", plots.plot_throughput),
        ("All-reduce bandwidth", "allreduce.png", plots.plot_allreduce),
        ("Training throughput", "training.png", plots.plot_training),
        ("Scaling against ideal, and efficiency", "scaling.png", plots.plot_scaling),
        ("Performance per watt", "per-watt.png", plots.plot_per_watt),
    ):
        if draw(sessions, out / name):
            made.append((caption, name))
    for session in sessions:
        name = f"telemetry-{session.name}.png"
        if plots.plot_telemetry(session, out / name):
            made.append((f"{session.name}: telemetry", name))
    return made


def write_report(paths: list[Path], out: Path, say: Say) -> Path:
    """Write index.md, index.html and the plots into `out`; return the Markdown file."""
    import matplotlib

    matplotlib.use("Agg")
    sessions = load(paths, say)
    out.mkdir(parents=True, exist_ok=True)
    figures = _plots(sessions, out)
    recorded = [(session.name, session.records) for session in sessions]
    sections = [("Servers", servers_table(sessions)), ("Kernel results", results_table(sessions)),
                ("Training runs", training_table(sessions)), ("Health", health_table(recorded)),
                ("Health events and alerts", events_table(recorded))]  # fmt: skip
    sections = [(title, rows) for title, rows in sections if len(rows) > 1 or title == "Servers"]
    wirings = server_wirings(recorded)
    whatifs = whatif_views(recorded)
    charts = whatif_charts(whatifs, out)
    title = "dltui report: " + ", ".join(session.name for session in sessions)
    markdown = [f"# {markdown_text(title)}", "", NOTE, ""]
    for heading, rows in sections:
        markdown += [f"## {heading}", "", markdown_table(rows), ""]
        if heading == "Servers":
            markdown += wiring_markdown(wirings)
    markdown += whatif_markdown(whatifs, charts, markdown_table)
    markdown += [f"## {caption}\n\n![{caption}]({file})\n" for caption, file in figures]
    write_text(out / "index.md", "\n".join(markdown))
    tables = "".join(
        f"<h2>{html.escape(name)}</h2>{html_table(rows)}"
        + (wiring_html(wirings) if name == "Servers" else "")
        for name, rows in sections
    ) + whatif_html(whatifs, charts, html_table)
    images = "".join(
        f"<h2>{html.escape(caption)}</h2><img src='{file}' alt='{html.escape(caption)}'>"
        for caption, file in figures
    )
    page = (
        "<!doctype html><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;"
        "font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
        "td:first-child,td:nth-child(2),td:nth-child(3){text-align:left}img{max-width:100%}"
        ".side{display:flex;gap:2em;align-items:flex-start}pre{font-size:12px}"
        f"</style><h1>{html.escape(title)}</h1><p>{html.escape(NOTE)}</p>{tables}{images}"
    )
    write_text(out / "index.html", page)
    return out / "index.md"
