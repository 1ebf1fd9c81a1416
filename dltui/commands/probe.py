"""`dltui probe AGENT [--json]`: print an agent's inventory (with how the server is wired), one
sample and a health summary (each GPU's health fields, the conditions up), then exit."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from typing import Any

from dltui.client.probe import probe
from dltui.commands import exit_status
from dltui.commands.options import (
    add_connection_options,
    apply_connection_options,
    secret_option,
    target_argument,
)
from dltui.fleet.health import EventBook, gpu_health, health_summary, worst_event
from dltui.formatting import fmt_count, fmt_memory, fmt_value
from dltui.protocol.fields import GPU_FIELDS, HOST_FIELDS, FieldSpec, throttle_reasons_in
from dltui.protocol.messages import Event, Sample, Welcome
from dltui.protocol.wire import to_plain
from dltui.result_text import wiring_lines


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dltui probe",
        description="Print an agent's inventory and one sample, then exit.",
        epilog=exit_status.epilog(
            exit_status.OK, exit_status.FAILED, exit_status.USAGE, exit_status.REFUSED,
            exit_status.BUSY, exit_status.UNREACHABLE,
        ),
    )  # fmt: skip
    parser.add_argument(
        "agent", type=target_argument, metavar="AGENT", help="see 'reaching agents'"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    add_connection_options(parser)
    return parser


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    args = parser.parse_args(argv)
    secret = secret_option(args.secret_file)
    (target,) = apply_connection_options(args, [args.agent])

    def busy(why: str) -> None:
        print(f"dltui probe: {target.label}: {why}; trying again", file=sys.stderr)

    welcome, sample, received = asyncio.run(probe(target, secret, busy))
    events = EventBook()
    for event in received:
        events.add(event)
    if args.json:
        report = {"agent_id": welcome.agent_id, "rate_hz": welcome.rate_hz}
        report |= {"inventory": to_plain(welcome.inventory), "sample": to_plain(sample)}
        report["health"] = health_summary(welcome.inventory, sample, events)
        report, unrepresentable = finite(report)
        if unrepresentable:
            report["null_because_not_finite"] = unrepresentable
        print(json.dumps(report, indent=2, allow_nan=False))
    else:
        print(describe(welcome, sample))
        print("\n".join(health_lines(sample, events)))
    return exit_status.OK


def finite(value: Any, path: str = "") -> tuple[Any, list[str]]:
    """`value` with every NaN or infinity (which JSON has no word for: an agent may send them)
    made null, and the path and value of each, so the reader learns why it is null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None, [f"{path}: {value}"]
    if isinstance(value, dict):
        pairs = [(key, finite(item, f"{path}.{key}" if path else str(key)))
                 for key, item in value.items()]  # fmt: skip
        return {key: item for key, (item, _) in pairs}, [w for _, (_, why) in pairs for w in why]
    if isinstance(value, list):
        items = [finite(item, f"{path}[{index}]") for index, item in enumerate(value)]
        return [item for item, _ in items], [w for _, why in items for w in why]
    return value, []


def health_lines(sample: Sample, events: EventBook) -> list[str]:
    """The verdict first ("health    critical: gpu 1: XID 79 …"), then each GPU's state and
    health fields, then every open event (a condition up, an XID within ONCE_OPEN_S)."""
    opened = events.open_events(sample.wall)
    worst = worst_event(opened)
    if worst is not None:
        verdict = f"{worst.severity}: {where(worst)}{worst.detail}"
        if len(opened) > 1:
            verdict += f" (+{len(opened) - 1} more)"
    elif any(gpu.state != "ok" for gpu in sample.gpus):
        verdict = "warning: a GPU does not read ok (below)"
    else:
        verdict = "ok"
    lines = [f"health    {verdict}"]
    for gpu in sample.gpus:
        found = gpu_health(gpu.values)
        words = ", ".join(f"{name} {fmt_count(value)}" for name, value in found.items()
                          if name != "throttle")  # fmt: skip
        held = ", ".join(found.get("throttle", [])) or "nothing"
        state = "" if gpu.state == "ok" else f"state {gpu.state}; "
        lines.append(f"  gpu {gpu.index}     {state}{words or 'no health fields'}; "
                     f"clocks held by {held}")  # fmt: skip
    if not opened:
        lines.append("  open events: none")
    for event in opened:
        lines.append(f"  {event.severity:<9} {where(event)}{event.detail}")
    return lines


def where(event: Event) -> str:
    return f"gpu {event.gpu}: " if event.gpu is not None else "host: "


NAME = 22
"""Cells of a field's name: the longest (remapped_uncorrectable) and a space."""
VALUE = 12


def value_lines(values: dict[str, float], fields: dict[str, FieldSpec]) -> list[str]:
    """A line per value, in the fields' order (then any the table does not know, by name):
    its name, its value right-aligned with its unit, what it is; throttle reasons in words."""
    known = [name for name in fields if name in values]
    lines = []
    for name in known + sorted(set(values) - set(fields)):
        value, spec = values[name], fields.get(name)
        if name == "throttle" and spec is not None:
            words = ", ".join(throttle_reasons_in(int(value))) or "none"
            lines.append(f"{name:<{NAME}}{'':>{VALUE}}  {words}")
            continue
        text = fmt_value(value, spec.unit if spec else "")
        lines.append(f"{name:<{NAME}}{text:>{VALUE}}  {spec.label if spec else ''}".rstrip())
    return lines


def describe(welcome: Welcome, sample: Sample) -> str:
    inv = welcome.inventory
    lines = [
        f"{inv.hostname}  (agent {welcome.agent_id}, {welcome.rate_hz:g} Hz, dltui {inv.dltui})",
        f"  os        {inv.os}",
        f"  cpu       {inv.cpu_model} × {inv.cpu_count}",
        f"  memory    {fmt_memory(inv.memory_total)}",
        f"  python    {inv.python}",
        "  frameworks " + (", ".join(f"{k} {v}" for k, v in inv.frameworks.items()) or "none"),
    ]
    if inv.gpus:
        lines.append(f"  driver    {inv.driver_version}   CUDA {inv.cuda_version}")
    else:
        lines.append(f"  gpus      none ({inv.nvml_error or 'no NVIDIA GPU'})")
    for gpu in inv.gpus:
        link = f"PCIe gen{gpu.pcie_gen} x{gpu.pcie_width}" if gpu.pcie_gen else "PCIe ?"
        lines.append(
            f"  gpu {gpu.index}     {gpu.name}  {fmt_memory(gpu.memory_total)}  {link}  "
            f"NVLink links {gpu.nvlink_links}  GPM {'yes' if gpu.gpm else 'no'}  {gpu.uuid}"
        )
    lines.append("wiring")
    lines += [f"  {line}" for line in wiring_lines(inv)]
    lines.append("sample")
    lines += [f"  host  {line}" for line in value_lines(sample.host.values, HOST_FIELDS)]
    for gpu_sample in sample.gpus:
        lines.append(f"  gpu {gpu_sample.index} ({gpu_sample.state})")
        lines += [f"    {line}" for line in value_lines(gpu_sample.values, GPU_FIELDS)]
        for name, reason in gpu_sample.errors.items():
            lines.append(f"    {name:<{NAME}} error: {reason}")
    return "\n".join(lines)
