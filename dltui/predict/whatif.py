"""The answer to "one bigger server or more servers?": a table of layouts with predicted
images/s and efficiency, measured figures beside them where they exist, and the network each
layout needs to reach a target efficiency. The CLI, the TUI and the report all show this."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dltui.formatting import GB, fmt_duration, fmt_gbps
from dltui.predict.links import LinkCurve
from dltui.predict.model import Fabric, Layout, Prediction, efficiency_vs_server, network_for
from dltui.predict.model import predict as predict_layout
from dltui.predict.workload import Workload

DEFAULT_LAYOUTS = ("1x1", "1x8", "2x4", "4x2", "8x1", "16x8", "64x8")
"""The whitepaper's question for eight GPUs, and two clusters beyond it."""


@dataclass(frozen=True, slots=True)
class Row:
    prediction: Prediction
    efficiency_vs_server: float | None
    measured_images_per_s: float | None
    network_gbit: float | None
    """Line rate between servers that reaches the target efficiency; None: none would (or no
    target asked); 0: the layout needs no network."""

    @property
    def error(self) -> float | None:
        """Predicted over measured, less one."""
        measured, predicted = self.measured_images_per_s, self.prediction.images_per_s
        return predicted / measured - 1 if measured and predicted else None


@dataclass(frozen=True, slots=True)
class WhatIf:
    workload: Workload
    fabric: Fabric
    rows: list[Row]
    target: float | None
    notes: list[str]
    """Measurements that could not be used, and why."""

    @property
    def sources(self) -> list[str]:
        """What every figure came from, in words."""
        found = [f"step: {self.workload.source} ({self.workload.timing})"]
        inter: list[LinkCurve | None] = [*self.fabric.inter_measured.values()]
        for name, curve in [("inside a server", self.fabric.intra)] + [
            ("between servers", curve) for curve in inter or [self.fabric.inter]
        ]:
            if curve is not None:
                fitted = f", fit within {curve.error:.1%}" if curve.error is not None else ""
                rate, latency = fmt_gbps(curve.busbw / GB), fmt_duration(curve.alpha_s)
                found.append(f"{name}: {curve.source}; {rate} bus bandwidth, {latency} a step"
                             f"{fitted}")  # fmt: skip
        return found

    def to_plain(self) -> dict[str, Any]:
        """For --json: every figure marked predicted, with what it came from."""
        return {
            "predicted": True,
            "model": self.workload.model,
            "batch_per_gpu": self.workload.batch,
            "overlap": self.workload.timing,
            "sources": self.sources,
            "target_efficiency": self.target,
            "notes": self.notes,
            "rows": [_plain(row) for row in self.rows],
        }


def what_if(
    workload: Workload,
    fabric: Fabric,
    layouts: Sequence[Layout],
    target: float | None = None,
    measured: Mapping[tuple[int, int], float] | None = None,
    notes: list[str] | None = None,
) -> WhatIf:
    """Each layout predicted; `measured` maps (servers, GPUs a server) to images/s measured."""
    rows = []
    for layout in layouts:
        prediction = predict_layout(workload, layout, fabric)
        one_server = predict_layout(workload, Layout(1, layout.gpus), fabric)
        network = None
        if target is not None and prediction.missing is None:
            busbw = network_for(workload, layout, fabric, target)
            inter = fabric.across(layout.servers)
            if busbw is not None and inter is not None:
                network = busbw / inter.efficiency * 8 / 1e9
            elif busbw == 0.0:
                network = 0.0
        rows.append(Row(
            prediction,
            efficiency_vs_server(prediction, one_server) if layout.servers > 1 else None,
            (measured or {}).get((layout.servers, layout.gpus)),
            network,
        ))  # fmt: skip
    return WhatIf(workload, fabric, rows, target, notes or [])


def _plain(row: Row) -> dict[str, Any]:
    p = row.prediction
    return {
        "layout": str(p.layout).replace("×", "x"),
        "servers": p.layout.servers,
        "gpus_per_server": p.layout.gpus,
        "predicted_step_s": p.step_s or None,
        "predicted_images_per_s": p.images_per_s or None,
        "predicted_efficiency_vs_gpu": p.efficiency_vs_gpu or None,
        "predicted_efficiency_vs_server": row.efficiency_vs_server,
        "predicted_communication_s": p.communication_s if not p.missing else None,
        "predicted_waiting_share": p.waiting_share if not p.missing else None,
        "network_gbit_for_target": row.network_gbit,
        "measured_images_per_s": row.measured_images_per_s,
        "missing": p.missing,
    }
