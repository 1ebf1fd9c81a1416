"""`dltui bench …`: run a plan on one or more agents and print results as they come.

The same path the TUI uses: the plan goes to each agent as a `run` frame, the agent's worker
runs it, and results come back as frames, so a local run and a remote one differ only in the
address. With several agents and all-reduce, the run is one job across them (scale-out): the
client hands out ranks and the rendezvous, and if one agent's part fails the others are
cancelled and the error names it. Otherwise each agent runs the plan on its own, side by side.
Ctrl-C cancels every job and waits for the agents to confirm.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from dltui.bench.plan import PlanError, check_plan
from dltui.bench.table import HEADER, format_row
from dltui.client.connection import handshake, new_job_id
from dltui.client.scale_out import assign_ranks
from dltui.client.target import Target
from dltui.client.transport import Transport, failure_reason, open_transport
from dltui.protocol.errors import AuthError, ProtocolError
from dltui.protocol.messages import (
    Bye,
    Cancel,
    JobEnd,
    JobProgress,
    JobResult,
    KernelPlan,
    KernelResult,
    Message,
    Run,
    Welcome,
    to_plain,
)

# Worst first: the exit code of a run over several agents is its worst agent's.
EXIT_CODES = {"failed": 1, "refused": 2, "cancelled": 130, "done": 0}
SEVERITY = list(EXIT_CODES)


class ProgressBar:
    """One line on stderr, redrawn in place; silent when stderr is not a terminal."""

    def __init__(self, out: TextIO = sys.stderr, width: int = 30) -> None:
        self.out, self.width = out, width
        self.live = out.isatty()

    def show(self, done: int, total: int, label: str) -> None:
        if not self.live or total <= 0:
            return
        filled = round(self.width * done / total)
        bar = "█" * filled + "·" * (self.width - filled)
        self.out.write(f"\r\x1b[2K{bar} {done}/{total} {label[:60]}")
        self.out.flush()

    def clear(self) -> None:
        if self.live:
            self.out.write("\r\x1b[2K")
            self.out.flush()


@dataclass
class _Agent:
    target: Target
    transport: Transport
    welcome: Welcome
    plan: KernelPlan
    job: str
    name: str
    """The hostname, with the address when two agents share one (agents on one host)."""
    done: int = 0
    total: int = 0
    end: JobEnd | None = None
    cancelled: bool = False

    async def cancel(self) -> None:
        if self.end is None and not self.cancelled:
            self.cancelled = True
            await self.transport.stream.send(Cancel(2, self.job))


class _Unreachable(Exception):
    def __init__(self, target: Target, cause: BaseException) -> None:
        super().__init__(f"{target.label}: {cause}")
        self.target, self.cause = target, cause


async def _connect(target: Target, secret: bytes | None) -> tuple[Transport, Welcome]:
    try:
        transport = await open_transport(target)
    except OSError as exc:
        raise _Unreachable(target, exc) from exc
    try:
        return transport, await handshake(transport.stream, secret, socket.gethostname())
    except (OSError, EOFError, ProtocolError) as exc:
        await transport.close()
        raise _Unreachable(target, exc) from exc


def _describe(welcome: Welcome) -> str:
    inventory = welcome.inventory
    gpus = f"{len(inventory.gpus)}× {inventory.gpus[0].name}" if inventory.gpus else "no GPU"
    return f"{inventory.hostname}: {gpus}"


async def run_jobs(
    targets: list[Target],
    plan: KernelPlan,
    secret: bytes | None,
    json_out: Path | None,
    rendezvous: tuple[str, int] | None = None,
) -> int:
    connected = await asyncio.gather(
        *(_connect(target, secret) for target in targets), return_exceptions=True
    )
    transports = [c[0] for c in connected if isinstance(c, tuple)]
    try:
        failed = next((c for c in connected if isinstance(c, BaseException)), None)
        if failed is not None:
            raise failed
        welcomes = [welcome for _, welcome in connected]  # type: ignore[misc]
        scale_out = len(targets) > 1 and "allreduce" in plan.kinds
        plans = (
            assign_ranks(plan, targets, [w.inventory for w in welcomes], rendezvous)
            if scale_out
            else [plan] * len(targets)
        )
        hostnames = [welcome.inventory.hostname for welcome in welcomes]
        names = [
            name if hostnames.count(name) == 1 else f"{name}@{target.label}"
            for name, target in zip(hostnames, targets, strict=True)
        ]
        agents = [
            _Agent(*parts, new_job_id(), name)
            for *parts, name in zip(targets, transports, welcomes, plans, names, strict=True)
        ]
        return await _follow(agents, scale_out, json_out)
    finally:
        await asyncio.gather(*(transport.close() for transport in transports))


async def _follow(agents: list[_Agent], scale_out: bool, json_out: Path | None) -> int:
    several = len(agents) > 1
    for agent in agents:
        print(f"# {_describe(agent.welcome)}; {agent.plan.framework}, set {agent.plan.shape_set}")
    if scale_out:
        role = agents[0].plan.cluster
        assert role is not None
        where = ", ".join(role.peers) or f"{role.master_addr}:{role.master_port}"
        unit = "TensorFlow workers" if role.peers else "ranks"
        print(f"# one all-reduce over {role.world} {unit}; rendezvous {where}")
    print(f"{'server':<24} {HEADER}" if several else HEADER)
    inbox: asyncio.Queue[tuple[_Agent, Message | BaseException]] = asyncio.Queue()

    async def listen(agent: _Agent) -> None:
        try:
            while agent.end is None:
                await inbox.put((agent, await agent.transport.stream.receive()))
        except (OSError, EOFError, ProtocolError) as exc:
            await inbox.put((agent, exc))

    for agent in agents:
        await agent.transport.stream.send(Run(1, agent.job, agent.plan))
    listeners = [asyncio.create_task(listen(agent)) for agent in agents]
    results: list[tuple[str, KernelResult]] = []
    failures: list[_Agent] = []  # parts of a run across servers that failed, first first
    bar = ProgressBar()
    interrupted = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, interrupted.set)
    try:
        while any(agent.end is None for agent in agents):
            get = asyncio.ensure_future(inbox.get())
            stop = asyncio.ensure_future(interrupted.wait())
            await asyncio.wait({get, stop}, return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            if interrupted.is_set():
                interrupted.clear()
                bar.clear()
                print("# cancelling …", file=sys.stderr)
                await asyncio.gather(*(agent.cancel() for agent in agents))
            if not get.done():
                get.cancel()
                continue
            agent, message = get.result()
            if isinstance(message, BaseException):
                reason = f"lost the agent: {failure_reason(message)}"
                message = JobEnd(agent.job, "failed", reason)
            if isinstance(message, JobProgress) and message.job == agent.job:
                agent.done, agent.total = message.done, message.total
                done, total = sum(a.done for a in agents), sum(a.total for a in agents)
                bar.show(
                    done, total, f"{agent.name}: {message.label}" if several else message.label
                )
            elif isinstance(message, JobResult) and message.job == agent.job:
                bar.clear()
                results.append((agent.name, message.result))
                row = format_row(message.result)
                print(f"{agent.name[:24]:<24} {row}" if several else row, flush=True)
            elif isinstance(message, JobEnd) and message.job == agent.job:
                bar.clear()
                agent.end = message
                if message.error:
                    print(f"# {agent.name}: job {message.state}: {message.error}", file=sys.stderr)
                if scale_out and message.state in ("failed", "refused"):
                    # One part of a collective failed: the others would wait for it forever.
                    failures.append(agent)
                    await asyncio.gather(*(other.cancel() for other in agents))
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        for listener in listeners:
            listener.cancel()
    for agent in agents:
        await agent.transport.stream.send(Bye("done", 3))
    ends = [agent.end for agent in agents if agent.end is not None]
    if failures:
        why = "; ".join(f"{a.name} {a.end.state}: {a.end.error}" for a in failures if a.end)
        print(f"# the run across servers stopped: {why}", file=sys.stderr)
    if json_out is not None:
        report = {
            "agents": [
                {
                    "target": agent.target.label,
                    "agent": agent.welcome.agent_id,
                    "inventory": to_plain(agent.welcome.inventory),
                    "plan": to_plain(agent.plan),
                    "state": agent.end.state if agent.end else None,
                    "error": agent.end.error if agent.end else None,
                }
                for agent in agents
            ],
            "results": [{"server": name, **to_plain(result)} for name, result in results],
        }
        json_out.write_text(json.dumps(report, indent=2) + "\n")
    worst = min((end.state for end in ends), key=SEVERITY.index)
    return EXIT_CODES[worst]


def run(
    targets: list[Target],
    plan: KernelPlan,
    secret: bytes | None,
    json_out: Path | None,
    rendezvous: tuple[str, int] | None = None,
) -> int:
    try:
        check_plan(plan)
    except PlanError as exc:
        print(f"dltui bench: {exc}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(run_jobs(targets, plan, secret, json_out, rendezvous))
    except _Unreachable as exc:
        label = exc.target.label
        if isinstance(exc.cause, AuthError):
            print(f"dltui bench: {label} refused the connection: {exc.cause}", file=sys.stderr)
            return 3
        print(f"dltui bench: cannot reach {label}: {failure_reason(exc.cause)}", file=sys.stderr)
        return 2
