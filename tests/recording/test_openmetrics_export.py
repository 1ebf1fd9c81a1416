"""`dltui export --format openmetrics`: the real H200 recording as OpenMetrics, under the live
endpoint's names; prometheus-client's parser reads it, `promtool tsdb create-blocks-from
openmetrics` imports it, and a Prometheus server over the imported block answers a query with
the tensor activity recorded during the GEMM phase."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from dltui.agent.metrics import families
from dltui.protocol.messages import JobProgress, JobResult, Sample, Welcome
from dltui.protocol.metric_names import all_specs, gpu_labels, sample_points
from dltui.recording.reader import RecordingReader
from tests.conftest import ROOT, dltui_command
from tests.prometheus import PrometheusServer, promtool, values

H200 = ROOT / "tests/fixtures/h200x2-kernels.dlrec"


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("openmetrics") / "h200.om"
    result = subprocess.run(
        dltui_command("export", str(H200), "--format", "openmetrics", "-o", str(out)),
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert "17 kernel results" in result.stdout
    return out


def test_the_export_is_openmetrics_under_the_live_endpoints_names(exported):
    text = exported.read_text()
    assert text.endswith("# EOF\n")
    parsed = {family.name: family for family in text_string_to_metric_families(text)}
    assert set(parsed) <= {spec.name for spec in all_specs()}
    records = RecordingReader(H200).read_all()
    welcome = next(r.message for r in records if isinstance(r.message, Welcome))
    sample = next(r.message for r in records if isinstance(r.message, Sample))
    inventory = welcome.inventory
    labels = {gpu.index: gpu_labels(inventory.hostname, gpu.index, gpu) for gpu in inventory.gpus}
    live = families(sample_points(sample, inventory.hostname, labels))
    assert {family.name for family in live} <= set(parsed)  # the endpoint's families, by name
    power = [s for s in parsed["dltui_gpu_power_watts"].samples if s.labels["gpu"] == "1"]
    recorded = [(g.values["power"], s.wall) for r in records if isinstance(s := r.message, Sample)
                for g in s.gpus if g.index == 1 and "power" in g.values]  # fmt: skip
    assert [(p.value, float(p.timestamp)) for p in power] == [
        (value, round(wall * 1000) / 1000) for value, wall in recorded
    ]
    assert {p.labels["instance"] for p in power} == {records[0].source}
    tflops = parsed["dltui_bench_tflops"].samples
    results = [r.message.result for r in records if isinstance(r.message, JobResult)]
    assert len(tflops) == sum(r.tflops is not None for r in results) == 10


def gemm_phase(records: list) -> tuple[float, float]:
    """From the first GEMM case's start to a second after its last result: GPM averages over
    0.5 s, so a phase's activity shows in the samples just after it."""
    gemm = [r.received for r in records
            if (isinstance(r.message, JobProgress) and r.message.label.startswith("gemm"))
            or (isinstance(r.message, JobResult) and r.message.result.kind == "gemm")]  # fmt: skip
    return min(gemm), max(gemm) + 1.0


def test_promtool_imports_it_and_prometheus_answers_for_the_gemm_phase(exported, tmp_path):
    blocks = tmp_path / "data"
    imported = promtool("tsdb", "create-blocks-from", "openmetrics", str(exported), str(blocks))
    assert imported.returncode == 0, imported.stderr + imported.stdout
    records = RecordingReader(H200).read_all()
    began, ended = gemm_phase(records)
    tensor = {(g.index, s.wall): g.values["tensor_active"] for r in records
              if isinstance(s := r.message, Sample) and began <= r.received <= ended
              for g in s.gpus if "tensor_active" in g.values}  # fmt: skip
    peak = max(value for (index, _), value in tensor.items() if index == 0)
    assert peak > 50  # the GEMMs kept GPU 0's tensor cores busy
    window = f"{round((ended - began) * 1000)}ms"
    prometheus = PrometheusServer(tmp_path / "prometheus", data=blocks)
    try:
        # The block is loaded before Prometheus says it is ready.
        answer = prometheus.query(f"max_over_time(dltui_gpu_tensor_active_ratio[{window}])",
                                  at=ended)  # fmt: skip
        assert values(answer, "gpu") == pytest.approx({
            str(index): max(v for (i, _), v in tensor.items() if i == index) / 100
            for index in {index for index, _ in tensor}
        })  # fmt: skip
        counted = prometheus.query(
            f'count_over_time(dltui_gpu_tensor_active_ratio{{gpu="0"}}[{window}])', at=ended
        )
        assert values(counted, "gpu") == {"0": sum(i == 0 for i, _ in tensor)}
        before = prometheus.query(f"max_over_time(dltui_gpu_tensor_active_ratio[{window}])",
                                  at=began - 0.5)  # fmt: skip
        assert set(values(before, "gpu").values()) == {0.0}  # idle before the GEMMs
        tflops = prometheus.query('dltui_bench_tflops{case="8448x48000x2816 TN"}', at=ended)
        assert values(tflops, "precision") == pytest.approx({"bf16": 683.1240650089442})
    finally:
        prometheus.stop()


def test_promtool_needs_no_more_than_the_file(tmp_path):
    """The export of two recordings of different agents is one importable file."""
    out = tmp_path / "both.om"
    cpu = ROOT / "tests/fixtures/cpu-kernels.dlrec"
    result = subprocess.run(dltui_command("export", str(H200), str(cpu), "--format",
                                          "openmetrics", "-o", str(out)), cwd=ROOT)  # fmt: skip
    assert result.returncode == 0
    assert promtool("tsdb", "create-blocks-from", "openmetrics", str(out),
                    str(tmp_path / "data")).returncode == 0  # fmt: skip
