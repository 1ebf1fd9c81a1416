"""`dltui probe`: connect once, print the inventory and one sample, exit."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import sys

from dltui.client.connection import BACKOFF, AgentBusy, handshake, handshake_timeout
from dltui.client.target import Target
from dltui.client.transport import failure_reason, open_transport
from dltui.formatting import fmt_bytes, fmt_value
from dltui.protocol.errors import AuthError, ProtocolError
from dltui.protocol.fields import GPU_FIELDS, HOST_FIELDS
from dltui.protocol.messages import Bye, Sample, Subscribe, Welcome, to_plain

FIRST_SAMPLE_TIMEOUT = 10.0
SETTLE = 1.2  # seconds: slow fields (GPM, clocks, ECC) come every 0.5-1 s

BUSY_PATIENCE = 30.0
"""Seconds probe keeps trying an agent that answers `busy`, with backoff."""

EXIT_UNREACHABLE = 2
EXIT_REFUSED = 3
EXIT_BUSY = 4


async def fetch(target: Target, secret: bytes | None) -> tuple[Welcome, Sample]:
    """The agent's welcome and a sample taken once the slow fields have had time to arrive."""
    transport = await open_transport(target)
    try:
        stream = transport.stream
        welcome = await handshake(stream, secret, socket.gethostname(), handshake_timeout(target))
        await stream.send(Subscribe(1, 10.0))

        async def next_sample() -> Sample:
            while not isinstance(message := await stream.receive(), Sample):
                pass
            return message

        sample = await asyncio.wait_for(next_sample(), FIRST_SAMPLE_TIMEOUT)
        settled = sample.mono + SETTLE
        while sample.mono < settled:
            sample = await asyncio.wait_for(next_sample(), FIRST_SAMPLE_TIMEOUT)
        await stream.send(Bye("probe done", 2))
        return welcome, sample
    finally:
        await transport.close()


async def fetch_when_free(target: Target, secret: bytes | None) -> tuple[Welcome, Sample]:
    """`fetch`, tried again with backoff while the agent says it is busy, for BUSY_PATIENCE."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + BUSY_PATIENCE
    pauses = itertools.chain(BACKOFF, itertools.repeat(BACKOFF[-1]))
    while True:
        try:
            return await fetch(target, secret)
        except AgentBusy as exc:
            pause = next(pauses)
            if loop.time() + pause > give_up:
                raise
            if pause == BACKOFF[0]:
                print(f"dltui probe: {target.label}: {exc}; trying again", file=sys.stderr)
            await asyncio.sleep(pause)


def probe(target: Target, secret: bytes | None, as_json: bool = False) -> int:
    try:
        welcome, sample = asyncio.run(fetch_when_free(target, secret))
    except AgentBusy as exc:
        print(f"dltui probe: {target.label} is still busy: {exc}", file=sys.stderr)
        return EXIT_BUSY
    except AuthError as exc:
        print(f"dltui probe: {target.label} refused the connection: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except (OSError, EOFError, ProtocolError) as exc:
        print(f"dltui probe: cannot reach {target.label}: {failure_reason(exc)}", file=sys.stderr)
        return EXIT_UNREACHABLE
    if as_json:
        report = {"agent_id": welcome.agent_id, "rate_hz": welcome.rate_hz}
        report |= {"inventory": to_plain(welcome.inventory), "sample": to_plain(sample)}
        print(json.dumps(report, indent=2))
    else:
        print(describe(welcome, sample))
    return 0


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
