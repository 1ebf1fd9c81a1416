"""`dltui bench kernels|models …`: run a plan on agents and print results as they come.

The same path the TUI uses: the client's connections carry the plan to each agent as a `run`
frame, the agent's worker runs it, results come back as frames, and a `Campaign` decides what
runs where (side by side, or one run across servers). A local run and a remote one differ only
in the address. Ctrl-C cancels every job and waits for the agents to confirm.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from dltui.client.campaign import Campaign, check_layout
from dltui.client.connection import AgentConnection
from dltui.client.target import Target
from dltui.formatting import HEADER, MODEL_HEADER, format_model_row, format_row
from dltui.plans.check import PlanError, check_plan
from dltui.plans.scaling import scaling
from dltui.protocol.messages import (
    JobEnd,
    JobProgress,
    JobResult,
    JobState,
    KernelResult,
    Link,
    Message,
    ModelPlan,
    ModelResult,
    Plan,
    Welcome,
    to_plain,
)

EXIT_CODES: dict[JobState, int] = {"failed": 1, "refused": 2, "cancelled": 130, "done": 0}
EXIT_UNREACHABLE = 2
EXIT_REFUSED = 3
CONNECT_TIMEOUT = 30.0
CLIENT_RATE_HZ = 1.0  # the CLI prints results, not telemetry: few samples, please


class ProgressBar:
    """One line on stderr, redrawn in place; silent when stderr is not a terminal."""

    def __init__(self, out: TextIO = sys.stderr, width: int = 30) -> None:
        self.out, self.width = out, width
        self.live = out.isatty()

    def show(self, done: float, total: int, label: str) -> None:
        if not self.live or total <= 0:
            return
        filled = round(self.width * min(done / total, 1.0))
        bar = "█" * filled + "·" * (self.width - filled)
        self.out.write(f"\r\x1b[2K{bar} {int(done)}/{total} {label[:60]}")
        self.out.flush()

    def clear(self) -> None:
        if self.live:
            self.out.write("\r\x1b[2K")
            self.out.flush()


class Unreachable(Exception):
    def __init__(self, target: Target, reason: str, refused: bool) -> None:
        super().__init__(f"{target.label}: {reason}")
        self.target, self.reason, self.refused = target, reason, refused


@dataclass
class _Watch:
    """What the CLI follows of each agent: who it is, and how far its jobs are."""

    connection: AgentConnection
    name: str = ""
    welcome: Welcome | None = None
    failure: Link | None = None
    progress: dict[str, JobProgress] = field(default_factory=dict)


class BenchRun:
    """Connections, a campaign over them, and a table printed as results arrive."""

    def __init__(self, targets: list[Target], plan: Plan, secret: bytes | None) -> None:
        self.plan = plan
        self.bar = ProgressBar()
        self.changed = asyncio.Event()
        self.watches = {
            connection.source: _Watch(connection)
            for connection in (
                AgentConnection(target, self.receive, secret, CLIENT_RATE_HZ) for target in targets
            )
        }
        self.campaign: Campaign | None = None
        self.tasks: list[asyncio.Task[None]] = []
        self.cancelling: asyncio.Task[None] | None = None
        self.kernel_results: list[tuple[str, KernelResult]] = []
        self.model_results: list[tuple[str, ModelResult]] = []

    @property
    def several(self) -> bool:
        return len(self.watches) > 1

    def receive(self, source: str, message: Message) -> None:
        watch = self.watches[source]
        if isinstance(message, Welcome):
            watch.welcome = message
        elif isinstance(message, Link) and message.state in ("offline", "auth_failed"):
            watch.failure = watch.failure or (message if watch.welcome is None else None)
        if self.campaign is not None:
            self.campaign.observe(source, message)
            self._show(watch, message)
        self.changed.set()

    def _jobs(self) -> set[str]:
        assert self.campaign is not None
        return {part.job for step in self.campaign.steps for part in step.parts if part.job}

    def _show(self, watch: _Watch, message: Message) -> None:
        job = getattr(message, "job", None)  # samples carry none: most frames stop here
        if job is None or job not in self._jobs():
            return
        prefix = f"{watch.name[:24]:<24} " if self.several else ""
        if isinstance(message, JobProgress):
            watch.progress[message.job] = message
            self._draw_progress(watch, message)
        elif isinstance(message, JobResult):
            self.bar.clear()
            if message.result is not None:
                self.kernel_results.append((watch.name, message.result))
                print(prefix + format_row(message.result), flush=True)
            if message.model is not None:
                self.model_results.append((watch.name, message.model))
                row = format_model_row(message.model, scaling(self.model_results)[-1])
                print(prefix + row, flush=True)
        elif isinstance(message, JobEnd):
            self.bar.clear()
            if message.error:
                print(f"# {watch.name}: job {message.state}: {message.error}", file=sys.stderr)

    def _draw_progress(self, watch: _Watch, message: JobProgress) -> None:
        latest = [p for w in self.watches.values() for p in w.progress.values()]
        done = sum(p.done + (p.fraction or 0.0) for p in latest)
        total = sum(p.total for p in latest)
        label = f"{watch.name}: {message.label}" if self.several else message.label
        self.bar.show(done, total, label)

    async def connect(self) -> None:
        """Wait until every agent has said who it is; Unreachable names the first that can't."""
        self.tasks = [
            asyncio.create_task(watch.connection.run(), name=f"agent {source}")
            for source, watch in self.watches.items()
        ]
        async with asyncio.timeout(CONNECT_TIMEOUT):
            while True:
                for watch in self.watches.values():
                    if watch.failure is not None:
                        link = watch.failure
                        raise Unreachable(
                            watch.connection.target,
                            link.detail or link.state,
                            link.state == "auth_failed",
                        )
                if all(watch.welcome is not None for watch in self.watches.values()):
                    break
                self.changed.clear()
                await self.changed.wait()
        hostnames = [w.welcome.inventory.hostname for w in self.watches.values() if w.welcome]
        for watch, hostname in zip(self.watches.values(), hostnames, strict=True):
            label = watch.connection.target.label
            watch.name = hostname if hostnames.count(hostname) == 1 else f"{hostname}@{label}"

    async def run(self, across: bool, rendezvous: tuple[str, int] | None, baselines: bool) -> int:
        connections = [watch.connection for watch in self.watches.values()]
        self.campaign = campaign = Campaign(
            self.plan, list(connections), across, rendezvous, baselines
        )
        for watch in self.watches.values():
            print(f"# {_describe(watch)}; {_plan_words(self.plan)}")
        if across:
            print(f"# one run across {len(connections)} servers" + _rendezvous_words(campaign))
        print(f"{'server':<24} " * self.several + self._header())
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, self._interrupt)
        try:
            state = await campaign.run()
        finally:
            loop.remove_signal_handler(signal.SIGINT)
        if across and (failures := campaign.failures(lambda m: self.watches[m.source].name)):
            print(f"# the run across servers stopped: {'; '.join(failures)}", file=sys.stderr)
        return EXIT_CODES[state]

    def _header(self) -> str:
        return MODEL_HEADER if isinstance(self.plan, ModelPlan) else HEADER

    def _interrupt(self) -> None:
        self.bar.clear()
        print("# cancelling …", file=sys.stderr)
        if self.campaign is not None:
            self.cancelling = asyncio.create_task(self.campaign.cancel())

    async def close(self) -> None:
        await asyncio.gather(*(watch.connection.stop() for watch in self.watches.values()))
        for task in self.tasks:  # some may sleep in a reconnect back-off
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    def report(self) -> dict[str, object]:
        """The whole run as JSON: who the agents are, every job, every result."""
        jobs = [
            {
                "step": step.label,
                "target": part.member.target.label,
                "plan": to_plain(part.plan),
                "state": part.end.state if part.end else None,
                "error": part.end.error if part.end else None,
            }
            for step in (self.campaign.steps if self.campaign else [])
            for part in step.parts
        ]
        scalings = scaling(self.model_results)
        return {
            "agents": [
                {
                    "target": watch.connection.target.label,
                    "agent": watch.welcome.agent_id if watch.welcome else None,
                    "inventory": to_plain(watch.welcome.inventory) if watch.welcome else None,
                }
                for watch in self.watches.values()
            ],
            "jobs": jobs,
            "results": [{"server": name, **to_plain(r)} for name, r in self.kernel_results],
            "models": [
                {"server": name, **to_plain(result), "efficiency": to_plain(scaled)}
                for (name, result), scaled in zip(self.model_results, scalings, strict=True)
            ],
        }


def _describe(watch: _Watch) -> str:
    assert watch.welcome is not None
    inventory = watch.welcome.inventory
    gpus = f"{len(inventory.gpus)}× {inventory.gpus[0].name}" if inventory.gpus else "no GPU"
    return f"{watch.name}: {gpus}"


def _plan_words(plan: Plan) -> str:
    if isinstance(plan, ModelPlan):
        return f"{plan.framework}, models {', '.join(plan.models)}"
    return f"{plan.framework}, set {plan.shape_set}"


def _rendezvous_words(campaign: Campaign) -> str:
    last = campaign.steps[-1].parts[0].plan.cluster
    if last is None:
        return ""
    where = ", ".join(last.peers) or f"{last.master_addr}:{last.master_port}"
    unit = "TensorFlow workers" if last.peers else "ranks"
    return f": {last.world} {unit}; rendezvous {where}"


async def _bench(
    targets: list[Target],
    plan: Plan,
    secret: bytes | None,
    json_out: Path | None,
    across: bool,
    rendezvous: tuple[str, int] | None,
    baselines: bool,
) -> int:
    bench = BenchRun(targets, plan, secret)
    try:
        await bench.connect()
        code = await bench.run(across, rendezvous, baselines)
    finally:
        await bench.close()
    if json_out is not None:
        json_out.write_text(json.dumps(bench.report(), indent=2) + "\n")
    return code


def run(
    targets: list[Target],
    plan: Plan,
    secret: bytes | None,
    json_out: Path | None,
    across: bool,
    rendezvous: tuple[str, int] | None = None,
    baselines: bool = True,
) -> int:
    try:
        check_plan(plan)
        check_layout(plan, len(targets), across)
    except (PlanError, ValueError) as exc:
        print(f"dltui bench: {exc}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_bench(targets, plan, secret, json_out, across, rendezvous, baselines))
    except Unreachable as exc:
        if exc.refused:
            print(f"dltui bench: {exc.target.label} refused the connection: {exc.reason}",
                  file=sys.stderr)  # fmt: skip
            return EXIT_REFUSED
        print(f"dltui bench: cannot reach {exc.target.label}: {exc.reason}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except TimeoutError:
        print(f"dltui bench: not every agent answered within {CONNECT_TIMEOUT:g} s",
              file=sys.stderr)  # fmt: skip
        return EXIT_UNREACHABLE
