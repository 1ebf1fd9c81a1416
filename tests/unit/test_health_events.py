"""Health events from samples, alert rules (parsed with one-line errors, evaluated with their
durations), and the agent's event log that numbers them and keeps the conditions up."""

from __future__ import annotations

import pytest

from dltui.agent.alerts import AlertRules, RuleError, parse_rules
from dltui.agent.events import EventLog
from dltui.agent.health import COUNT_INTERVAL_S, RESOLVE_AFTER_S, HealthCheck
from dltui.protocol.inventory import GpuInfo, Inventory
from dltui.protocol.messages import Event, Sample
from dltui.protocol.samples import GpuSample, HostSample

INVENTORY = Inventory("gpu-01", "Linux", "Xeon", 64, 2**40, gpus=[
    GpuInfo(0, "NVIDIA H200", "GPU-0", 141 << 30, 5, 16, 5, 16),
    GpuInfo(1, "NVIDIA H200", "GPU-1", 141 << 30, 5, 16, 5, 16),
])  # fmt: skip


def sample(mono: float, *gpus: dict[str, float], host: dict[str, float] | None = None) -> Sample:
    readings = [GpuSample(index, "ok", values) for index, values in enumerate(gpus)]
    return Sample(int(mono * 10), 1.7e9 + mono, mono, HostSample(host or {}), readings)


def words(events: list[Event]) -> list[tuple[str, int | None, str, str]]:
    return [(e.kind, e.gpu, e.severity, e.state) for e in events]


def test_a_link_trained_at_x8_is_raised_at_once_and_resolved_when_it_retrains() -> None:
    check = HealthCheck(INVENTORY)
    narrow = check.observe(sample(0.0, {"pcie_gen": 5, "pcie_width": 8}, {"pcie_width": 16}))
    assert words(narrow) == [("pcie_link", 0, "warning", "raised")]
    assert narrow[0].detail == "PCIe link trained at gen5 x8 (of x16)" and narrow[0].value == 8
    assert check.observe(sample(1.0, {"pcie_gen": 5, "pcie_width": 8})) == []
    back = check.observe(sample(2.0, {"pcie_gen": 5, "pcie_width": 16}))
    assert words(back) == [("pcie_link", 0, "warning", "resolved")]


def test_a_lower_generation_counts_only_under_load() -> None:
    check = HealthCheck(INVENTORY)
    assert check.observe(sample(0.0, {"pcie_gen": 1, "pcie_width": 16, "util_gpu": 0})) == []
    loaded = check.observe(sample(1.0, {"pcie_gen": 3, "pcie_width": 16, "util_gpu": 100}))
    assert loaded[0].detail == "PCIe link at gen3 under load (of gen5)"
    assert check.observe(sample(2.0, {"pcie_gen": 1, "pcie_width": 16, "util_gpu": 0})) == []


def test_throttle_reasons_are_raised_and_resolved_after_a_quiet_spell() -> None:
    check = HealthCheck(INVENTORY)
    assert check.observe(sample(0.0, {"throttle": 0x4})) == []  # power cap: no event
    hot = check.observe(sample(1.0, {"throttle": 0x8 | 0x40}))
    assert words(hot) == [("hw_slowdown", 0, "warning", "raised"),
                          ("hw_thermal", 0, "critical", "raised")]  # fmt: skip
    assert check.observe(sample(1.5, {"throttle": 0x1})) == []  # flickers off: not yet
    assert check.observe(sample(1.6, {"throttle": 0x8})) == []
    ended = check.observe(sample(1.0 + RESOLVE_AFTER_S + 0.1, {"throttle": 0x1}))
    assert words(ended) == [("hw_thermal", 0, "critical", "resolved")]
    assert words(check.observe(sample(1.6 + RESOLVE_AFTER_S + 0.1, {"throttle": 0}))) == [
        ("hw_slowdown", 0, "warning", "resolved")]  # fmt: skip


def test_counts_that_grow_are_events_at_most_once_a_minute() -> None:
    check = HealthCheck(INVENTORY)
    assert check.observe(sample(0.0, {"pcie_replay": 100, "ecc_uncorrected": 0})) == []
    grew = check.observe(sample(1.0, {"pcie_replay": 103, "ecc_uncorrected": 1}))
    assert [(e.kind, e.detail, e.state) for e in grew] == [
        ("pcie_replay", "3 more PCIe replays (103 in all)", "once"),
        ("ecc_uncorrected", "1 more uncorrected ECC errors (1 in all)", "once"),
    ]
    assert check.observe(sample(2.0, {"pcie_replay": 110})) == []  # within the minute
    later = check.observe(sample(1.0 + COUNT_INTERVAL_S, {"pcie_replay": 111}))
    assert later[0].detail == "8 more PCIe replays (111 in all)"


def test_growth_within_the_minute_is_told_when_it_is_up_though_the_count_stood_still() -> None:
    check = HealthCheck(INVENTORY)
    check.observe(sample(0.0, {"pcie_replay": 100}))
    assert len(check.observe(sample(1.0, {"pcie_replay": 103}))) == 1
    for mono in (2.0, 3.0, 30.0):  # grew again, then the same reading every tick
        assert check.observe(sample(mono, {"pcie_replay": 110})) == []
    (later,) = check.observe(sample(1.0 + COUNT_INTERVAL_S, {"pcie_replay": 110}))
    assert later.detail == "7 more PCIe replays (110 in all)"
    assert check.observe(sample(2.0 + COUNT_INTERVAL_S, {"pcie_replay": 110})) == []


def test_pending_and_failed_remaps_and_a_lost_gpu() -> None:
    check = HealthCheck(INVENTORY)
    found = check.observe(sample(0.0, {"remap_pending": 1, "remap_failed": 1}))
    assert words(found) == [("remap_pending", 0, "warning", "raised"),
                            ("remap_failed", 0, "critical", "raised")]  # fmt: skip
    lost = Sample(2, 1.7e9, 0.2, HostSample({}), [GpuSample(0, "lost", {})])
    assert words(check.observe(lost)) == [("gpu_lost", 0, "critical", "once")]
    assert check.observe(lost) == []


@pytest.mark.parametrize(
    ("rule", "error"),
    [
        ({"name": "hot", "when": "gpu.temperature > 85", "severity": "warning"},
         "rule 'hot': when: unknown gpu field 'temperature' (known: util_gpu, "),
        ({"name": "hot", "when": "gpu.temp > 85 for 30 s", "severity": "warning"},
         "rule 'hot': when: 'gpu.temp > 85 for 30 s' is not \"SCOPE.FIELD OP NUMBER"),
        ({"name": "hot", "when": "gpu.temp > 85 for 30x", "severity": "warning"},
         "a duration is a number and s, m or h (30s, 1m), got '30x'"),
        ({"name": "hot", "when": "gpu.temp > 85", "severity": "page"},
         "rule 'hot': severity: expected warning or critical, got 'page'"),
        ({"name": "r", "when": "host.mem_used / gpu.mem_total > 0.9", "severity": "warning"},
         "a ratio's two fields must be of one scope, got host and gpu"),
        ({"name": "t", "when": 'gpu.throttle has "too hot"', "severity": "warning"},
         "unknown throttle reason 'too hot' (known: \"idle\", "),
        ({"name": "x", "when": "event fire", "severity": "critical"},
         "unknown event kind 'fire' (known: ecc_uncorrected, gpu_lost,"),
        ({"name": "x", "when": "event xid", "severity": "critical", "page": True},
         "rule 'x': unknown keys page (known: name, when, severity)"),
        ({"when": "event xid", "severity": "critical"}, "rule #1: name: expected letters"),
    ],
)  # fmt: skip
def test_a_bad_rule_is_one_line_that_says_why(rule, error) -> None:
    with pytest.raises(RuleError) as raised:
        parse_rules([rule])
    assert error in str(raised.value) and "\n" not in str(raised.value)


def test_a_temperature_rule_fires_after_its_duration_per_gpu_and_resolves() -> None:
    (rule,) = parse_rules([{"name": "hot", "when": "gpu.temp > 85 for 30s",
                            "severity": "warning"}])  # fmt: skip
    rules = AlertRules([rule])
    assert rules.observe(sample(0.0, {"temp": 90}, {"temp": 60})) == []
    assert rules.observe(sample(29.0, {"temp": 91}, {"temp": 60})) == []
    fired = rules.observe(sample(30.0, {"temp": 92}, {"temp": 60}))
    assert words(fired) == [("alert", 0, "warning", "raised")]
    assert fired[0].rule == "hot" and fired[0].value == 92
    assert fired[0].detail == "hot: gpu.temp > 85 for 30s holds on GPU 0 (temp 92 °C)"
    assert rules.observe(sample(31.0, {}, {"temp": 60})) == []  # no reading: as it was
    resolved = rules.observe(sample(32.0, {"temp": 80}, {"temp": 60}))
    assert words(resolved) == [("alert", 0, "warning", "resolved")]


def test_a_host_ratio_rule_a_throttle_rule_and_an_event_rule() -> None:
    rules = AlertRules(parse_rules([
        {"name": "mem", "when": "host.mem_used / host.mem_total > 0.95 for 1m",
         "severity": "critical"},
        {"name": "slow", "when": 'gpu.throttle has "hardware slowdown"', "severity": "warning"},
        {"name": "xid", "when": "event xid", "severity": "critical"},
    ]))  # fmt: skip
    full = {"mem_used": 97.0, "mem_total": 100.0}
    assert rules.observe(sample(0.0, {"throttle": 0}, host=full)) == []
    fired = rules.observe(sample(60.0, {"throttle": 0x8}, host=full))
    assert [(e.rule, e.gpu, e.state) for e in fired] == [("mem", None, "raised"),
                                                         ("slow", 0, "raised")]  # fmt: skip
    xid = Event(4, "xid", "critical", "XID 79: GPU has fallen off the bus", 1.0, gpu=1,
                state="once", value=79)  # fmt: skip
    (alert,) = rules.on_event(xid)
    assert (alert.rule, alert.gpu, alert.state, alert.detail) == (
        "xid",
        1,
        "once",
        "xid: XID 79: GPU has fallen off the bus",
    )


def test_the_event_log_numbers_logs_chains_alerts_and_keeps_the_conditions_up(caplog) -> None:
    published: list[Event] = []
    rules = parse_rules([{"name": "link", "when": "event pcie_link", "severity": "critical"}])
    log = EventLog(INVENTORY, rules, published.append)
    log.observe(sample(0.0, {"pcie_gen": 5, "pcie_width": 8}))
    assert [(e.id, e.kind) for e in published] == [(1, "pcie_link"), (2, "alert")]
    assert [e.id for e in log.raised()] == [1]
    assert "event 1, warning pcie_link on GPU 0: PCIe link trained at gen5 x8" in caplog.text
    log.observe(sample(1.0, {"pcie_gen": 5, "pcie_width": 16}))
    assert published[-1].state == "resolved" and log.raised() == []


def test_the_agents_config_takes_alert_tables_and_says_a_bad_one_in_one_line(tmp_path) -> None:
    from dltui.agent.config import ConfigFileError, load_config

    good = tmp_path / "good.toml"
    good.write_text('listen = "127.0.0.1:0"\n[[alert]]\nname = "hot"\n'
                    'when = "gpu.temp > 85 for 30s"\nseverity = "warning"\n')  # fmt: skip
    (rule,) = load_config(good)["alert"]
    assert (rule.name, rule.fields, rule.threshold, rule.seconds) == ("hot", ("temp",), 85, 30)
    bad = tmp_path / "bad.toml"
    bad.write_text('[[alert]]\nname = "hot"\nwhen = "gpu.temp >> 85"\nseverity = "warning"\n')
    with pytest.raises(ConfigFileError) as raised:
        load_config(bad)
    message = str(raised.value)
    assert message.startswith(f"config {bad}: [[alert]] rule 'hot': when: 'gpu.temp >> 85' is")
    assert "\n" not in message
