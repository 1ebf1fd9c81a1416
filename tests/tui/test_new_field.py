"""A telemetry field added as one FieldSpec entry reaches every place that shows fields: the
TUI's charts (Pilot), its help, `/metrics` (the agent's collector and exposition) and the
exports (CSV rows and OpenMetrics), with nothing else changed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.registry import Collector

from dltui.agent.metrics import families
from dltui.protocol.fields import GPU_FIELDS, ChartSpec, FieldSpec
from dltui.protocol.messages import Sample
from dltui.protocol.metric_names import gpu_labels, sample_points
from dltui.recording.export import export
from dltui.recording.format import Header
from dltui.recording.writer import RecordingWriter
from dltui.tui.replay_app import create_replay_app
from tests.tui.pilot import wait_for_text
from tests.tui.synthetic import server_messages

FAN = FieldSpec("fan", "%", "fan speed", "fan_speed", chart=ChartSpec("fan", 100.0),
                help="how fast the fans turn, against their maximum")  # fmt: skip
T0 = 1.7e9


@pytest.fixture
def fan(monkeypatch: pytest.MonkeyPatch) -> FieldSpec:
    monkeypatch.setitem(GPU_FIELDS, "fan", FAN)
    return FAN


def with_fan(messages: list) -> list:
    """The frames, each GPU's fan at 40% plus its index."""
    for message in messages:
        if isinstance(message, Sample):
            for gpu in message.gpus:
                gpu.values["fan"] = 40.0 + gpu.index
    return messages


def record(path: Path) -> Path:
    writer = RecordingWriter(path, Header("test", T0, {"fanbox": "fanbox:7070"}))
    for message in with_fan(server_messages("fanbox", 2, T0, seconds=20.0)):
        writer.write("fanbox", message, getattr(message, "wall", T0))
    writer.close()
    assert writer.failure is None
    return path


async def test_the_tui_charts_it_and_its_help_says_what_it_measures(fan, tmp_path):
    app = create_replay_app([record(tmp_path / "fan.dlrec")])
    async with app.run_test(size=(200, 60)) as pilot:
        text = await wait_for_text(pilot, r"fan +100%┤")  # on its physical scale
        lines = text.splitlines()
        for row, line in enumerate(lines):  # each chart's latest value under its label
            for at in (found.start() for found in re.finditer(r"fan +100%┤", line)):
                assert re.match(r"4[01]% ", lines[row + 1][at:]), lines[row + 1]
        assert text.index("fan ") > text.index("nvl rx")  # in the fields' order
        await pilot.press("question_mark", "end")  # the GPU fields are near its end
        await wait_for_text(pilot, r"fan +how fast the fans turn, against their maximum")


def test_metrics_and_exports_carry_it(fan, tmp_path):
    messages = with_fan(server_messages("fanbox", 2, T0, seconds=2.0))
    sample = next(m for m in reversed(messages) if isinstance(m, Sample))
    inventory = messages[0].inventory
    labels = {gpu.index: gpu_labels("fanbox", gpu.index, gpu) for gpu in inventory.gpus}

    class Latest(Collector):  # the agent's collector, given the latest sample
        def collect(self):
            return families(sample_points(sample, "fanbox", labels))

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Latest())
    scraped = generate_latest(registry).decode()
    assert "# HELP dltui_gpu_fan_speed_ratio fan speed" in scraped
    assert 'dltui_gpu_fan_speed_ratio{gpu="1",hostname="fanbox"' in scraped
    line = next(line for line in scraped.splitlines()
                if line.startswith('dltui_gpu_fan_speed_ratio{gpu="1"'))  # fmt: skip
    assert float(line.rpartition(" ")[2]) == pytest.approx(0.41)  # 41% as a ratio

    path = record(tmp_path / "fan.dlrec")
    export([path], "csv", tmp_path / "csv", print)
    rows = (tmp_path / "csv" / "telemetry.csv").read_text().splitlines()
    assert any(row.endswith(",gpu,0,fan,40.0") for row in rows)
    export([path], "openmetrics", tmp_path / "fan.om", print)
    exported = (tmp_path / "fan.om").read_text()
    assert "# TYPE dltui_gpu_fan_speed_ratio gauge" in exported
    assert "# UNIT dltui_gpu_fan_speed_ratio ratio" in exported
