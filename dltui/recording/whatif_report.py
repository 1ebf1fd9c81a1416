"""The report's what-if section: per model the recordings profile on one GPU, the predicted
images/s and scaling efficiency of layouts of servers × GPUs, the measured figure beside each
where one was recorded, what every prediction came from, and a chart.

The network between servers is the one measured (an all-reduce across servers); where none was,
a described one (recording/whatif.py), which the sources say.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from dltui.predict.answer import NothingToPredict
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.recording.format import Record
from dltui.recording.results import results_of
from dltui.recording.whatif import WhatIfView, profiled_models, table_rows, what_if_view

Recording = tuple[str, Sequence[Record]]
"""A recording's name and its records."""
NOTE = ("Every figure in this section but the measured column is predicted by dltui's what-if "
        "model (dltui predict), from the measurements named above each table: the one-GPU "
        "step profile (compute, and when backward makes each gradient ready) and all-reduce "
        "curves fitted to latency + size/bandwidth. Data-parallel training with the batch per "
        "GPU fixed; all-reduce in buckets overlapped with backward as DDP does, hierarchical "
        "across servers. 'comm wait' is the share of the step spent waiting on "
        "communication; 'predicted vs measured' is the prediction over the measured figure, "
        "less one.")  # fmt: skip

Table = Callable[[list[list[str]]], str]


def whatif_views(recordings: Sequence[Recording]) -> list[WhatIfView]:
    """A table per profiled model, from the results of all the recordings together."""
    kernels: list[tuple[str, KernelResult]] = []
    models: list[tuple[str, ModelResult]] = []
    for _, records in recordings:
        found = results_of(records)
        kernels += found[0]
        models += found[1]
    views = []
    for model in profiled_models(kernels, models):
        try:
            views.append(what_if_view(kernels, models, model))
        except NothingToPredict:  # a profile that does not make a workload: nothing to show
            continue
    return views


def chart_name(view: WhatIfView) -> str:
    """The chart's file name; a model's name from a recording is foreign text."""
    return "whatif-" + re.sub(r"[^a-z0-9_-]+", "-", view.table.workload.model.lower()) + ".png"


def heading(view: WhatIfView) -> str:
    workload = view.table.workload
    return f"What-if (predicted): {workload.model}, batch {workload.batch} a GPU"


def whatif_markdown(views: Sequence[WhatIfView], charts: set[str], table: Table) -> list[str]:
    lines: list[str] = []
    for view in views:
        lines += [f"## {heading(view)}", "", NOTE, "", "Predicted from:", ""]
        lines += [f"- {source}" for source in view.table.sources]
        lines += ["", table(table_rows(view)), ""]
        if chart_name(view) in charts:
            lines += [f"![{heading(view)}]({chart_name(view)})", ""]
    return lines


def whatif_html(views: Sequence[WhatIfView], charts: set[str], table: Table) -> str:
    parts = []
    for view in views:
        title = html.escape(heading(view))
        sources = "".join(f"<li>{html.escape(line)}</li>" for line in view.table.sources)
        parts.append(f"<h2>{title}</h2><p>{html.escape(NOTE)}</p><p>Predicted from:</p>"
                     f"<ul>{sources}</ul>{table(table_rows(view))}")  # fmt: skip
        if chart_name(view) in charts:
            parts.append(f"<img src='{chart_name(view)}' alt='{title}'>")
    return "".join(parts)


def whatif_charts(views: Sequence[WhatIfView], out: Path) -> set[str]:
    """Draw each view's chart into `out`; the names of those drawn."""
    from dltui.recording import plots

    return {chart_name(view) for view in views if plots.plot_whatif(view, out / chart_name(view))}
