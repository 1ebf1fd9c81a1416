"""`dltui probe AGENT [--json]`: print an agent's inventory (with how the server is wired), one
sample and a health summary (each GPU's health fields, the conditions up), then exit."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from dltui.client.probe import probe
from dltui.commands import exit_status
from dltui.commands.options import add_connection_options, reach, secret_option, target_argument
from dltui.fleet.health import EventBook, gpu_health, health_summary
from dltui.formatting import fmt_bytes, fmt_value, wiring_lines
from dltui.protocol.fields import GPU_FIELDS, HOST_FIELDS
from dltui.protocol.messages import Sample, Welcome, to_plain


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
    (target,) = reach(args, [args.agent])

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
        print(json.dumps(report, indent=2))
    else:
        print(describe(welcome, sample))
        print("\n".join(health_lines(sample, events)))
    return 0


def health_lines(sample: Sample, events: EventBook) -> list[str]:
    lines = ["health"]
    for gpu in sample.gpus:
        found = gpu_health(gpu.values)
        words = ", ".join(f"{name} {value:g}" for name, value in found.items()
                          if name != "throttle")  # fmt: skip
        held = ", ".join(found.get("throttle", [])) or "nothing"
        lines.append(f"  gpu {gpu.index}     {words or 'no health fields'}; clocks held by {held}")
    if not events.raised:
        lines.append("  conditions up: none")
    for event in events.raised.values():
        where = f"gpu {event.gpu}" if event.gpu is not None else "host"
        lines.append(f"  {event.severity:<9} {where}: {event.detail}")
    return lines


def describe(welcome: Welcome, sample: Sample) -> str:
    inv = welcome.inventory
    lines = [
        f"{inv.hostname}  (agent {welcome.agent_id}, {welcome.rate_hz:g} Hz, dltui {inv.dltui})",
        f"  os        {inv.os}",
        f"  cpu       {inv.cpu_model} × {inv.cpu_count}",
        f"  memory    {fmt_bytes(inv.memory_total)}",
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
            f"  gpu {gpu.index}     {gpu.name}  {fmt_bytes(gpu.memory_total)}  {link}  "
            f"NVLink links {gpu.nvlink_links}  GPM {'yes' if gpu.gpm else 'no'}  {gpu.uuid}"
        )
    lines.append("wiring")
    lines += [f"  {line}" for line in wiring_lines(inv)]
    lines.append("sample")
    for name, value in sample.host.values.items():
        spec = HOST_FIELDS.get(name)
        lines.append(f"  host {name:<14} {fmt_value(value, spec.unit if spec else '')}")
    for gpu_sample in sample.gpus:
        lines.append(f"  gpu {gpu_sample.index} state {gpu_sample.state}")
        for name, value in gpu_sample.values.items():
            spec = GPU_FIELDS.get(name)
            lines.append(f"    {name:<16} {fmt_value(value, spec.unit if spec else '')}")
        for name, reason in gpu_sample.errors.items():
            lines.append(f"    {name:<16} error: {reason}")
    return "\n".join(lines)
