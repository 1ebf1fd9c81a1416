"""Results side by side, from the real recordings: rows, columns, ratios, export."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import pytest

from dltui.fleet.compare import REFERENCE, ExportError, build, export, server_names
from dltui.fleet.state import Fleet
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.recording.replay import ReplaySet, load_tracks
from tests.tui.synthetic import server_messages

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def comparison():
    replay = ReplaySet(load_tracks([FIXTURES / "h200x2-kernels.dlrec",
                                    FIXTURES / "cpu-kernels.dlrec"]), Fleet())  # fmt: skip
    replay.seek(replay.length)
    return build(replay.fleet)


def test_a_column_per_server_named_by_what_tells_them_apart(comparison) -> None:
    # Both recorded hosts are called "vm": the recordings' names tell them apart.
    assert comparison.columns == ["h200x2-kernels", "cpu-kernels · CPU"]
    # The CPU recording ran the H200's cases: every row has both servers, side by side.
    assert len(comparison.rows) == 17
    assert all(set(row.cells) == set(comparison.columns) for row in comparison.rows)


def test_ratios_to_the_reference_and_to_another_column(comparison) -> None:
    row = next(r for r in comparison.rows if r.label == "gemm 5124x9124x1760 NN fwd bf16")
    assert row.ratio("h200x2-kernels", REFERENCE, "rate") == pytest.approx(2.339, abs=1e-3)
    assert row.ratio("h200x2-kernels", "h200x2-kernels", "rate") is None  # the baseline itself
    # Against the CPU box: the H200 is hundreds of times faster at this GEMM.
    assert row.ratio("h200x2-kernels", "cpu-kernels · CPU", "rate") > 100
    cell = row.cells["h200x2-kernels"]
    assert cell.phase is not None and cell.phase.gpus() == {0}  # it ran on cuda:0
    # Recorded before kernels read their own energy: no per-watt, and the cell says why.
    assert cell.value("per_watt") is None and cell.missing("per_watt") == "no energy run"


def test_sorting_by_a_column_sorts_within_each_unit(comparison) -> None:
    rows = comparison.sorted_rows("h200x2-kernels", "rate", descending=True)
    assert rows[0].label == "gemm 2560x7000x2560 TN fwd bf16"
    # TFLOP/s among TFLOP/s first (the unit that ran first), then GB/s among GB/s.
    assert [row.label.split()[0] for row in rows] == ["gemm"] * 10 + ["allreduce"] * 7
    rates = [row.cells["h200x2-kernels"].value("rate") for row in rows]
    assert rates[:10] == sorted(rates[:10], reverse=True)
    assert rates[10:] == sorted(rates[10:], reverse=True)


def test_export_csv_and_json_and_never_overwrite(comparison, tmp_path: Path) -> None:
    written = export(comparison, "h200x2-kernels", tmp_path / "r.csv")
    rows = list(csv.DictReader((tmp_path / "r.csv").open()))
    assert written == len(rows) == 34 and rows[0]["baseline"] == "h200x2-kernels"
    assert export(comparison, REFERENCE, tmp_path / "r.json") == 34
    records = json.loads((tmp_path / "r.json").read_text())
    allreduce = next(r for r in records if r["shape"] == "64500000 floats ×2")
    # Half a second: shorter than the 1 s NVLink readings, so no figure of its own.
    assert allreduce.get("nvlink_tx") is None and allreduce["util_gpu"] == pytest.approx(98, abs=1)
    longer = next(r for r in records if r["shape"] == "100000 floats ×2")  # 4.6 s
    assert longer["pcie_tx"] == pytest.approx(5.5e6, rel=0.01)
    with pytest.raises(ExportError, match="exists"):
        export(comparison, REFERENCE, tmp_path / "r.csv")
    with pytest.raises(ExportError, match=r"\.csv or a \.json"):
        export(comparison, REFERENCE, tmp_path / "r.xlsx")
    assert not (tmp_path / "r.xlsx").exists()


def test_a_noisy_figure_dims_and_its_ratio_is_flagged() -> None:
    from dltui.fleet.compare import Cell, Row
    from dltui.tui.screens.results import cell_text

    steady = KernelResult("gemm", "torch", "cuda:0", "bf16", "fwd", "1x1x1 NN", median_s=1e-4,
                          spread_s=1e-6, tflops=500.0, iterations=400)  # fmt: skip
    jumpy = replace(steady, spread_s=2e-5, tflops=550.0)  # 20% spread
    row = Row(("k",), "gemm", "kernel", 0, {"a": Cell("a", steady), "b": Cell("b", jumpy)})
    assert not row.cells["a"].noisy and row.cells["b"].noisy
    plain, flagged = cell_text(row, "a", "b", "rate"), cell_text(row, "b", "a", "rate")
    assert "±1.0% 400 it" in plain.plain and plain.plain.endswith("0.91×?")  # against a noisy one
    assert flagged.plain.endswith("1.10×?") and flagged.style == "dim"


def test_an_efficiency_above_ideal_is_flagged_not_printed_plain() -> None:
    from dltui.fleet.compare import Cell, Row
    from dltui.plans.scaling import Scaling
    from dltui.tui.screens.results import cell_text

    run = ModelResult("alexnet", "torch", "cpu", "fp32", gpus=2, batch=8, images_per_s=310.0)
    cell = Cell("cpu · 2 procs", run, scaling=Scaling(vs_one_gpu=1.55))
    text = cell_text(Row(("m",), "alexnet", "model", 0, {"x": cell}), "x", "x", "efficiency")
    assert text.plain == "155.0% ⚠ above ideal" and "yellow" in str(text.style)


def test_namesakes_are_told_apart_as_host_at_address() -> None:
    """Two agents whose machines share a hostname, on different addresses: each is
    hostname@address (as `dltui record` names them); a third keeps its plain hostname."""
    fleet = Fleet()
    for source, hostname in (("10.0.0.1:7070", "gpu"), ("10.0.0.2:7070", "gpu"),
                             ("10.0.0.3:7070", "cpu")):  # fmt: skip
        for message in server_messages(hostname, 1, 1.7e9, seconds=1.0):
            fleet.apply(source, message)
    assert server_names(fleet) == {"10.0.0.1:7070": "gpu@10.0.0.1:7070",
                                   "10.0.0.2:7070": "gpu@10.0.0.2:7070",
                                   "10.0.0.3:7070": "cpu"}  # fmt: skip
