"""Alert rules from the agent's config, evaluated in the agent on every sample, so that a
headless agent alerts with no client connected. A rule that fires or resolves is an `event`
(kind "alert"), sent to every client and written to the agent's log.

    [[alert]]
    name = "hot"
    when = "gpu.temp > 85 for 30s"
    severity = "warning"                       # or "critical"

`when` is one of:

- `SCOPE.FIELD OP NUMBER [for DURATION]`, the field a telemetry field of that scope (gpu or
  host: protocol/fields.py), OP one of > >= < <= == !=, DURATION like 30s, 1m, 2h; the left
  side may be a ratio of two fields of one scope: `host.mem_used / host.mem_total > 0.95 for
  1m`. A gpu rule holds per GPU: GPU 3 hot fires for GPU 3.
- `gpu.throttle has "REASON"`, a clock throttle reason in words ("hardware slowdown", …).
- `event KIND`: each health event of that kind (docs/health.md), e.g. `event xid`.

A rule fires once it has held for its duration and resolves as soon as it no longer holds; a
field a sample does not carry (a GPU lost, a field the GPU lacks) leaves the rule as it was.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dltui.agent.health import EVENT_KINDS
from dltui.plans.threshold import NUMBER_CHARS, threshold
from dltui.protocol.errors import quote
from dltui.protocol.fields import GPU_FIELDS, HOST_FIELDS, THROTTLE_REASONS
from dltui.protocol.messages import Event, EventState, Sample, Severity

MAX_RULES = 256
MAX_DURATION_S = 7 * 24 * 3600.0
RULE_SEVERITIES = ("warning", "critical")
SCOPES = {"gpu": GPU_FIELDS, "host": HOST_FIELDS}
OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
    ">": operator.gt, "<": operator.lt,
}  # fmt: skip
UNITS_S = {"s": 1.0, "m": 60.0, "h": 3600.0}
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_REF = r"(gpu|host)\.([a-z_0-9]+)"
_COMPARE = re.compile(
    rf"^{_REF}(?:\s*/\s*{_REF})?\s*(>=|<=|==|!=|>|<)\s*({NUMBER_CHARS})(?:\s+for\s+(\S+))?$"
)
_HAS = re.compile(r'^gpu\.throttle\s+has\s+"([^"]+)"$')
_EVENT = re.compile(r"^event\s+([a-z_]+)$")
_DURATION = re.compile(rf"^({NUMBER_CHARS})([smh])$")


class RuleError(ValueError):
    """A rule that does not parse, in one line."""


@dataclass(frozen=True)
class Rule:
    name: str
    when: str
    severity: Severity
    scope: str = "gpu"
    """gpu or host; an `event` rule has the events' own."""
    fields: tuple[str, ...] = ()
    """One field, or the numerator and denominator of a ratio."""
    compare: Callable[[float, float], bool] = operator.gt
    threshold: float = 0.0
    seconds: float = 0.0
    throttle_bit: int | None = None
    event_kind: str | None = None

    def value(self, values: dict[str, float]) -> float | None:
        """The rule's left side from a values map; None where a field is missing."""
        found = [values.get(name) for name in self.fields]
        if any(value is None for value in found):
            return None
        if len(found) == 1:
            return found[0]
        numerator, denominator = found
        assert numerator is not None and denominator is not None
        return numerator / denominator if denominator else None

    def holds(self, value: float) -> bool:
        if self.throttle_bit is not None:
            return bool(int(value) & self.throttle_bit)
        return self.compare(value, self.threshold)


def parse_rules(value: Any) -> list[Rule]:
    """The config's `alert` array of tables; RuleError names the first bad rule and why."""
    if type(value) is not list or not all(type(item) is dict for item in value):
        raise RuleError("expected [[alert]] tables, each with name, when and severity")
    if len(value) > MAX_RULES:
        raise RuleError(f"at most {MAX_RULES} rules, got {len(value)}")
    rules = []
    for position, table in enumerate(value, 1):
        label = quote(table["name"]) if type(table.get("name")) is str else f"#{position}"
        try:
            rules.append(parse_rule(table))
        except RuleError as exc:
            raise RuleError(f"rule {label}: {exc}") from None
    names = [rule.name for rule in rules]
    if len(set(names)) != len(names):
        twice = sorted({name for name in names if names.count(name) > 1})
        raise RuleError(f"rule names must differ: {', '.join(twice)} appear twice")
    return rules


def parse_rule(table: dict[str, Any]) -> Rule:
    unknown = sorted(set(table) - {"name", "when", "severity"})
    if unknown:
        raise RuleError(f"unknown keys {', '.join(unknown)} (known: name, when, severity)")
    name, when, severity = (table.get(key) for key in ("name", "when", "severity"))
    if type(name) is not str or not _NAME.fullmatch(name):
        raise RuleError(f"name: expected letters, digits, _ . - (1-64), got {quote(name)}")
    if severity not in RULE_SEVERITIES:
        raise RuleError(f"severity: expected warning or critical, got {quote(severity)}")
    if type(when) is not str:
        raise RuleError(f"when: expected a string, got {quote(when)}")
    return _condition(name, " ".join(when.split()), severity)


def _condition(name: str, when: str, severity: Severity) -> Rule:
    if match := _EVENT.match(when):
        kind = match.group(1)
        if kind not in EVENT_KINDS:
            raise RuleError(f"when: unknown event kind {quote(kind)} (known: "
                            f"{', '.join(sorted(EVENT_KINDS))})")  # fmt: skip
        return Rule(name, when, severity, event_kind=kind)
    if match := _HAS.match(when):
        words = match.group(1)
        bits = [bit for bit, text in THROTTLE_REASONS.items() if text == words]
        if not bits:
            known = ", ".join(f'"{text}"' for text in THROTTLE_REASONS.values())
            raise RuleError(f"when: unknown throttle reason {quote(words)} (known: {known})")
        return Rule(name, when, severity, "gpu", ("throttle",), throttle_bit=bits[0])
    match = _COMPARE.match(when)
    if match is None:
        raise RuleError(
            f'when: {quote(when)} is not "SCOPE.FIELD OP NUMBER [for DURATION]", '
            f'"SCOPE.FIELD / SCOPE.FIELD OP NUMBER [for DURATION]", '
            f'"gpu.throttle has \\"REASON\\"" or "event KIND"'
        )
    scope, first, other_scope, second, op, number, duration = match.groups()
    if other_scope is not None and other_scope != scope:
        raise RuleError(f"when: a ratio's two fields must be of one scope, got {scope} and "
                        f"{other_scope}")  # fmt: skip
    fields = (first,) if second is None else (first, second)
    for field_name in fields:
        if field_name not in SCOPES[scope]:
            raise RuleError(f"when: unknown {scope} field {quote(field_name)} (known: "
                            f"{', '.join(SCOPES[scope])})")  # fmt: skip
    try:
        value = threshold(number)
    except ValueError as exc:
        raise RuleError(f"when: the threshold: {exc}") from None
    return Rule(name, when, severity, scope, fields, OPERATORS[op], value,
                _seconds(duration) if duration else 0.0)  # fmt: skip


def _seconds(text: str) -> float:
    match = _DURATION.match(text)
    if match is None:
        raise RuleError(f"when: a duration is a number and s, m or h (30s, 1m), got {quote(text)}")
    try:
        seconds = threshold(match.group(1)) * UNITS_S[match.group(2)]
    except ValueError as exc:
        raise RuleError(f"when: a duration: {exc}") from None
    if not 0 <= seconds <= MAX_DURATION_S:
        raise RuleError(f"when: a duration must be 0 s to 7 days, got {quote(text)}")
    return seconds


@dataclass
class _State:
    since: float | None = None
    """When the rule began to hold (monotonic), while it holds."""
    firing: bool = False


@dataclass
class AlertRules:
    """The rules and, per rule and GPU (or the host), whether each holds and fires."""

    rules: list[Rule]
    _states: dict[tuple[str, int | None], _State] = field(default_factory=dict)

    def observe(self, sample: Sample) -> list[Event]:
        events: list[Event] = []
        for rule in self.rules:
            if rule.event_kind is not None:
                continue
            if rule.scope == "host":
                events += self._check(rule, None, sample.host.values, sample)
            else:
                for gpu in sample.gpus:
                    events += self._check(rule, gpu.index, gpu.values, sample)
        return events

    def _check(
        self, rule: Rule, gpu: int | None, values: dict[str, float], sample: Sample
    ) -> list[Event]:
        value = rule.value(values)
        if value is None:
            return []
        state = self._states.setdefault((rule.name, gpu), _State())
        if not rule.holds(value):
            state.since = None
            if not state.firing:
                return []
            state.firing = False
            return [_alert(rule, gpu, value, sample.wall, "resolved")]
        if state.since is None:
            state.since = sample.mono
        if state.firing or sample.mono - state.since < rule.seconds:
            return []
        state.firing = True
        return [_alert(rule, gpu, value, sample.wall, "raised")]

    def on_event(self, event: Event) -> list[Event]:
        """The `event KIND` rules an event fires, each once."""
        return [
            Event(0, "alert", rule.severity, f"{rule.name}: {event.detail}", event.wall,
                  gpu=event.gpu, state="once", rule=rule.name, value=event.value)
            for rule in self.rules if rule.event_kind == event.kind and event.state != "resolved"
        ]  # fmt: skip


def _alert(rule: Rule, gpu: int | None, value: float, wall: float, state: EventState) -> Event:
    where = f"GPU {gpu}" if gpu is not None else "host"
    words = "no longer holds" if state == "resolved" else "holds"
    detail = f"{rule.name}: {rule.when} {words} on {where} ({_describe_value(rule, value)})"
    return Event(0, "alert", rule.severity, detail, wall, gpu=gpu, state=state, rule=rule.name,
                 value=value)  # fmt: skip


def _describe_value(rule: Rule, value: float) -> str:
    if rule.throttle_bit is not None:
        return "throttle reasons " + hex(int(value))
    if len(rule.fields) == 2:
        return f"{rule.fields[0]} / {rule.fields[1]} = {value:.3g}"
    spec = SCOPES[rule.scope][rule.fields[0]]
    unit = f" {spec.unit}" if spec.unit and spec.unit != "%" else spec.unit
    return f"{rule.fields[0]} {value:g}{unit}"
