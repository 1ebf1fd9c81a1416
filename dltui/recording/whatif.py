"""The what-if tables that `dltui predict`, the report and the TUI's what-if screen show,
from results.

For a model the results profile on one GPU: the predictor's answer (dltui/predict) over the
layouts people ask about and those the results measured, over the network measured between
servers, or over a described one in its place where none was measured or one is chosen.
Pure, no I/O: the caller brings the (server, result) pairs, from a fleet or a recording.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dltui.formatting import fmt_gbit, fmt_ms, significant
from dltui.predict.answer import answer
from dltui.predict.described import server
from dltui.predict.measured import gather
from dltui.predict.model import Layout, parse_layout
from dltui.predict.whatif import DEFAULT_LAYOUTS, Row, WhatIf
from dltui.protocol.bench_results import KernelResult, ModelResult

NETWORK_GBIT = (10.0, 25.0, 100.0, 200.0, 400.0, 800.0)
"""The line rates between servers a reader steps through (+ and − on the what-if screen)."""
DEFAULT_NETWORK_GBIT = 100.0
"""The network described where nothing was measured between servers."""

Kernels = Sequence[tuple[str, KernelResult]]
Models = Sequence[tuple[str, ModelResult]]


@dataclass(frozen=True, slots=True)
class WhatIfView:
    table: WhatIf
    network_gbit: float | None
    """The described network's line rate; None: the one measured between servers."""
    measured_gbit: float | None
    """The line rate of the network measured between servers; None: none was."""

    @property
    def network_summary(self) -> str:
        """The network between servers: described or measured, and its line rate."""
        if self.network_gbit is None:
            return f"measured, {fmt_gbit(self.measured_gbit or 0)}"
        words = f"described, {fmt_gbit(self.network_gbit)}"
        return words if self.measured_gbit is not None else f"{words} (none measured)"


def images(rate: float) -> str:
    """Images/s to four figures: 1.099, 8.336, 2,188, 2,188,000 (a prediction holds no more)."""
    return significant(rate, 4)


def profiled_models(kernels: Kernels, models: Models) -> list[str]:
    """The models with a one-GPU step profile in the results, by name."""
    return sorted(gather(kernels, models).workloads)


def what_if_view(
    kernels: Kernels, models: Models, model: str, network_gbit: float | None = None
) -> WhatIfView:
    """`model`'s what-if table; NothingToPredict where the results do not profile it."""
    layouts = layouts_for(kernels, models, model)
    measured = answer(kernels, models, model, None, None, layouts)
    inter = measured.fabric.inter
    measured_gbit = inter.line_gbit if inter is not None else None
    if network_gbit is None and inter is not None:
        return WhatIfView(measured, None, measured_gbit)
    network = network_gbit or DEFAULT_NETWORK_GBIT
    link = server({"network_gbit": network, "transport": _transport(models, model)})
    table = answer(kernels, models, model, link, None, layouts)
    return WhatIfView(table, network, measured_gbit)


def layouts_for(kernels: Kernels, models: Models, model: str) -> list[Layout]:
    """The default layouts and every one the results measured `model` on at its profiled
    batch, by GPUs, then servers."""
    layouts = {parse_layout(text) for text in DEFAULT_LAYOUTS}
    workload = gather(kernels, models).workloads.get(model)
    for _, result in models:
        if (
            workload is not None
            and result.model == model
            and result.batch == workload.batch
            and result.images_per_s
            and result.error is None
            and 0 < result.servers <= result.gpus
            and result.gpus % result.servers == 0
        ):
            layouts.add(Layout(result.servers, result.gpus // result.servers))
    return sorted(layouts, key=lambda layout: (layout.total, layout.servers))


def step_network(view: WhatIfView, direction: int) -> float:
    """The next line rate of NETWORK_GBIT up (1) or down (−1) from the network shown."""
    shown = view.network_gbit or view.measured_gbit or DEFAULT_NETWORK_GBIT
    if direction > 0:
        return next((rate for rate in NETWORK_GBIT if rate > shown * 1.001), NETWORK_GBIT[-1])
    below = [rate for rate in NETWORK_GBIT if rate < shown * 0.999]
    return below[-1] if below else NETWORK_GBIT[0]


def _transport(models: Models, model: str) -> str:
    """RDMA between GPU servers, as NCCL runs; TCP between CPU hosts (Gloo, gRPC)."""
    for _, result in reversed(models):
        if result.model == model and result.profile is not None and result.gpus == 1:
            return "rdma" if result.device == "cuda" else "tcp"
    return "rdma"


def table_rows(view: WhatIfView) -> list[list[str]]:
    """The table as text cells, a heading first, every predicted figure marked so."""
    rows = [["layout", "GPUs", "predicted step", "predicted images/s", "predicted eff/GPU",
             "predicted eff/server", "predicted comm wait", "measured images/s",
             "predicted vs measured"]]  # fmt: skip
    rows += [row_cells(row) for row in view.table.rows]
    return rows


def row_cells(row: Row) -> list[str]:
    """One layout's cells: the layout and its GPUs; the step, images/s, both efficiencies and
    the wait predicted; what was measured and the prediction's error ("–" where none was)."""
    p = row.prediction
    head = [str(p.layout), f"{p.layout.total:,}"]
    measured = row.measured_images_per_s
    tail = [images(measured) if measured else "–",
            f"{row.error:+.1%}" if row.error is not None else "–"]  # fmt: skip
    if p.missing:
        return [*head, f"no prediction: {p.missing}", "", "", "", "", *tail]
    vs_server = row.efficiency_vs_server
    return [*head, fmt_ms(p.step_s), images(p.images_per_s),
            f"{p.efficiency_vs_gpu:.1%}", f"{vs_server:.1%}" if vs_server else "–",
            f"{p.waiting_share:.0%}", *tail]  # fmt: skip
