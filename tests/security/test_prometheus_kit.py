"""The Prometheus part of the deploy kit (agents/prometheus, agents/grafana) is what Prometheus and
the agent accept: promtool checks the scrape config and the rules, the alerts fire (promtool's
rule tests) on series named as the agent names them, and every query of the Grafana dashboard
is valid PromQL that names a metric the agent exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

from dltui.protocol.metric_names import (
    GPU_LABELS,
    GPU_UP,
    THROTTLE,
    MetricSpec,
    all_specs,
)
from tests.conftest import ROOT
from tests.prometheus import promtool

KIT = ROOT / "agents/prometheus"
DASHBOARD = ROOT / "agents/grafana/dltui-dashboard.json"


def exported() -> set[str]:
    """Every sample name the agent's /metrics serves."""
    return {spec.sample_name for spec in all_specs()}


_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
             "group_left", "group_right", "inf", "nan"}  # fmt: skip


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (not its functions, labels or keywords)."""
    text = re.sub(r'"(?:\\.|[^"\\])*"', "", expr)  # strings
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges
    text = _GROUPING.sub("", text)
    names = re.findall(r"(?<![\w:.])[a-zA-Z_:][\w:]*+(?!\s*\()", text)  # not a function
    return {name for name in names if name.lower() not in _KEYWORDS}


def test_metric_names_reads_promql():
    expr = 'sum by (gpu) (rate(dltui_a_total{x="y"}[5m])) / on (i) group_left (h) dltui_b{z=~"a|b"}'
    assert metric_names(f"{expr} > bool 0") == {"dltui_a_total", "dltui_b"}


def dashboard_queries() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [target["expr"] for panel in panels for target in panel.get("targets", [])]


def test_every_dashboard_query_names_a_metric_the_agent_exports():
    agent = exported()
    queries = dashboard_queries()
    assert len(queries) > 20
    for expr in queries:
        names = metric_names(expr)
        assert names & agent, f"{expr!r} names no metric the agent exports"
        assert names <= agent, f"{expr!r}: {names - agent} are not exported"
    shown = " ".join(queries)
    for what in ("utilization", "tensor_active", "power", "memory_used", "pcie", "nvlink",
                 "throttle_reason", "bench_tflops", "train_images", "samples_dropped",
                 "process_cpu_seconds_total", "process_resident_memory_bytes"):  # fmt: skip
        assert what in shown, f"the dashboard shows no {what}"


def test_every_dashboard_query_is_valid_promql(tmp_path):
    grafana = {"$__rate_interval": "1m", "$__range": "1h", "$__interval": "15s",
               "$hostname": ".*"}  # fmt: skip
    rules = []
    for number, expr in enumerate(dashboard_queries()):
        for variable, value in grafana.items():
            expr = expr.replace(variable, value)
        rules.append({"record": f"dashboard:query_{number}", "expr": expr})
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(json.dumps({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = promtool("check", "rules", str(path))
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_accepts_the_scrape_config_and_the_rules():
    result = promtool("check", "config", str(KIT / "prometheus.yml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 rule files found" in result.stdout and "SUCCESS: 5 rules found" in result.stdout
    config = (KIT / "prometheus.yml").read_text()
    assert "job_name: dltui" in config and "static_configs" in config
    assert "file_sd_configs" in config
    (group,) = json.loads((KIT / "targets/dltui-example.json").read_text())
    assert all(re.fullmatch(r"[\w.-]+:\d+", target) for target in group["targets"])


def without_annotations(rules: str) -> str:
    """The rules file without its annotations: promtool's rule tests compare them whole, and
    the words are not what is tested here."""
    kept, skipping = [], None
    for line in rules.splitlines():
        indent = len(line) - len(line.lstrip())
        if skipping is not None and (not line.strip() or indent > skipping):
            continue
        skipping = indent if line.strip() == "annotations:" else None
        if skipping is None:
            kept.append(line)
    return "\n".join(kept) + "\n"


def series(spec: MetricSpec, **labels: str) -> str:
    text = ", ".join(f'{name}="{value}"' for name, value in labels.items())
    return f"{spec.sample_name}{{{text}}}"


GPU = dict(zip(GPU_LABELS, ("gpu-07", "3", "GPU-3", "NVIDIA H200"), strict=True))
TARGET = {"instance": "gpu-07:9470", "job": "dltui"}
ECC = next(spec for spec in all_specs() if spec.name == "dltui_gpu_ecc_uncorrected_errors")


def test_the_alerts_fire_on_the_agents_series(tmp_path):
    rules = tmp_path / "dltui-alerts.yml"
    rules.write_text(without_annotations((KIT / "dltui-alerts.yml").read_text()))
    labels = GPU | TARGET
    slowdown = labels | {"reason": "hardware slowdown"}
    tests = {
        "rule_files": [str(rules)],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [
                {"series": 'up{instance="gpu-07:9470", job="dltui"}', "values": "1 1 0 0 0 0"},
                {"series": series(GPU_UP, **labels), "values": "1 0 0 0 0 0"},
                {"series": series(THROTTLE, **slowdown), "values": "1x10"},
                {"series": series(THROTTLE, **(labels | {"reason": "idle"})), "values": "1x10"},
                {"series": series(ECC, **labels), "values": "0 0 0 2 2 2"},
            ],
            "alert_rule_test": [
                {"eval_time": "5m", "alertname": "DltuiAgentDown",
                 "exp_alerts": [{"exp_labels": TARGET | {"severity": "critical"}}]},
                {"eval_time": "5m", "alertname": "DltuiGpuLost",
                 "exp_alerts": [{"exp_labels": labels | {"severity": "critical"}}]},
                {"eval_time": "6m", "alertname": "DltuiGpuHardwareSlowdown",
                 "exp_alerts": [{"exp_labels": {k: v for k, v in slowdown.items()
                                                if k not in TARGET} | {"severity": "warning"}}]},
                {"eval_time": "4m", "alertname": "DltuiGpuEccUncorrected",
                 "exp_alerts": [{"exp_labels": labels | {"severity": "critical"}}]},
                {"eval_time": "2m", "alertname": "DltuiGpuEccUncorrected", "exp_alerts": []},
            ],
        }],
    }  # fmt: skip
    path = tmp_path / "alerts-test.yml"
    path.write_text(json.dumps(tests))
    result = promtool("test", "rules", str(path))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_kit_is_documented():
    readme = (ROOT / "agents/README.md").read_text()
    for name in ("prometheus/prometheus.yml", "prometheus/dltui-alerts.yml",
                 "grafana/dltui-dashboard.json", "--metrics"):  # fmt: skip
        assert name in readme
    assert Path(KIT / "targets").is_dir()
