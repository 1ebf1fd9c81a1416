"""What `dltui bench` prints: a line per agent, then a table row per result as it arrives, a
progress bar on stderr, and at the end the whole run as JSON if asked.

A sink of the client session: it sees every frame and keeps those of the run's own jobs.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from typing import TextIO

from dltui.client.campaign import Campaign
from dltui.client.plan_run import PlanRun
from dltui.client.session import ClientSession
from dltui.formatting import describe_work, time_left
from dltui.plans.assertions import Baseline, case_key, ratio_to_baseline
from dltui.plans.gpt import is_gpt
from dltui.plans.scaling import scaling
from dltui.protocol.bench_plans import ModelPlan, Plan
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.protocol.messages import JobEnd, JobProgress, JobResult, Message, Welcome
from dltui.protocol.wire import to_plain
from dltui.result_text import (
    format_model_row,
    format_row,
    kernel_header,
    model_header,
    vs_base_text,
)


class ProgressBar:
    """One line on stderr, redrawn in place, with what is left at the pace so far; silent
    when stderr is not a terminal."""

    def __init__(self, out: TextIO = sys.stderr, width: int = 30) -> None:
        self.out, self.width = out, width
        self.live = out.isatty()
        self.started: float | None = None

    def show(self, done: float, total: int, label: str) -> None:
        """`done` counts cases, a training run's current one by the fraction of its steps."""
        if not self.live or total <= 0:
            return
        now = time.monotonic()
        self.started = self.started or now
        part = min(done / total, 1.0)
        filled = round(self.width * part)
        bar = "█" * filled + "·" * (self.width - filled)
        case = done - int(done)
        within = f" ({case:.0%} of this one)" if case else ""
        left = ""
        if 0.1 <= part < 1:  # before a tenth, start-up makes any pace a guess
            left = " · " + time_left((now - self.started) * (1 - part) / part)
        line = f"{bar} {int(done)}/{total}{within}{left} {label}"
        self.out.write(f"\r\x1b[2K{line[: terminal_width(self.out) - 1]}")
        self.out.flush()

    def clear(self) -> None:
        if self.live:
            self.out.write("\r\x1b[2K")
            self.out.flush()


def terminal_width(out: TextIO) -> int:
    try:
        return shutil.get_terminal_size().columns if out.isatty() else 10_000
    except OSError:
        return 80


class BenchTable:
    """Prints a run's results as they arrive; `report` is the whole run as JSON."""

    def __init__(
        self, run: PlanRun, names: dict[str, str], baseline_rates: Baseline | None = None
    ) -> None:
        self.run = run
        self.names = names
        """Each agent's name: its hostname, or hostname@address where two share one."""
        self.baseline_rates = baseline_rates
        """The --baseline file's rate per case: a `vs base` column holds each row's ratio."""
        self.bar = ProgressBar()
        self.progress: dict[str, dict[str, JobProgress]] = {source: {} for source in names}
        self.kernel_results: list[tuple[str, KernelResult]] = []
        self.model_results: list[tuple[str, ModelResult]] = []
        self.cancelling: asyncio.Task[None] | None = None
        self.flagged: dict[str, str] = {}
        """Each server's last flag: someone else's work its results shared the GPUs with."""

    @property
    def several(self) -> bool:
        return len(self.names) > 1

    def start(self, welcomes: dict[str, Welcome]) -> None:
        """Who the agents are, what runs and how big it is, and the table's header."""
        ((plan, across),) = self.run.plans  # a bench runs one plan
        steps = self.run.campaign.steps
        for source, welcome in welcomes.items():
            work = [
                part.plan for step in steps for part in step.parts if part.member.source == source
            ]
            size = describe_work(work, welcome.inventory)
            print(f"# {_describe(self.names[source], welcome)}; {_describe_plan(plan)}: {size}")
        if across:
            campaign = self.run.campaign
            print(f"# one run across {len(welcomes)} servers" + _describe_rendezvous(campaign))
            for step in campaign.steps[:-1]:  # a baseline: one part, on the first server
                baseline = step.parts[0]
                gpus = getattr(baseline.plan, "gpus", [])
                counts = f"{', '.join(map(str, gpus))} GPU{'s' * (gpus != [1])}"
                name = self.names[baseline.member.source]
                print(f"# first, what its scaling is judged against: {counts} on {name}")
        header = kernel_header(self.baseline_rates is not None)
        if isinstance(plan, ModelPlan):
            tokens = all(is_gpt(model) for model in plan.models)
            header = model_header(tokens, self.baseline_rates is not None)
        print(f"{'server':<24} " * self.several + header)

    def __call__(self, source: str, message: Message) -> None:
        job = getattr(message, "job", None)  # samples carry none: most frames stop here
        if job is None or job not in self.run.jobs():
            return
        name = self.names[source]
        prefix = f"{name[:24]:<24} " if self.several else ""
        if isinstance(message, JobProgress):
            self.progress[source][message.job] = message
            self._draw_progress(name, message)
        elif isinstance(message, JobResult):
            self.bar.clear()
            result = message.result or message.model
            if result is not None and result.others and self.flagged.get(name) != result.others:
                self.flagged[name] = result.others
                print(f"# {name}: busy: {result.others} (forced: the figures below shared the "
                      "GPUs with it)", flush=True)  # fmt: skip
            if message.result is not None:
                self.kernel_results.append((name, message.result))
                print(prefix + format_row(message.result, self._vs_base(message.result)),
                      flush=True)  # fmt: skip
            if message.model is not None:
                self.model_results.append((name, message.model))
                scaled = scaling(self.model_results)[-1]
                row = format_model_row(message.model, scaled, self._vs_base(message.model))
                print(prefix + row, flush=True)
        elif isinstance(message, JobEnd):
            self.bar.clear()
            if message.error and message.state != "cancelled":  # the end says cancelled once
                print(f"# {name}: job {message.state}: {message.error}", file=sys.stderr)

    def _vs_base(self, result: KernelResult | ModelResult) -> str | None:
        """The row's `vs base` cell; None where no --baseline was given (no such column)."""
        if self.baseline_rates is None:
            return None
        ratio = ratio_to_baseline(result, self.baseline_rates)
        return vs_base_text(ratio, case_key(result) in self.baseline_rates)

    def _draw_progress(self, name: str, message: JobProgress) -> None:
        latest = [p for jobs in self.progress.values() for p in jobs.values()]
        done = sum(p.done + (p.fraction or 0.0) for p in latest)
        total = sum(p.total for p in latest)
        label = f"{name}: {message.label}" if self.several else message.label
        self.bar.show(done, total, label)

    def interrupt(self) -> None:
        """Ctrl-C: cancel every job; the agents' confirmations end the run."""
        self.bar.clear()
        print("# cancelling …", file=sys.stderr)
        self.cancelling = asyncio.create_task(self.run.cancel())

    def end(self, state: str) -> None:
        self.bar.clear()
        if state == "cancelled":
            print("# cancelled", file=sys.stderr)
        elif self.run.campaign.across and self.run.failures:
            print(f"# the run across servers stopped: {'; '.join(self.run.failures)}",
                  file=sys.stderr)  # fmt: skip

    def report(self, session: ClientSession) -> dict[str, object]:
        """The whole run as JSON: who the agents are, every job, every result."""
        welcomes = session.welcomes()
        jobs = [
            {
                "step": step.label,
                "target": part.member.target.label,
                "plan": to_plain(part.plan),
                "state": part.end.state if part.end else None,
                "error": part.end.error if part.end else None,
            }
            for campaign in self.run.campaigns
            for step in campaign.steps
            for part in step.parts
        ]
        scalings = scaling(self.model_results)
        return {
            "agents": [
                {
                    "target": connection.target.label,
                    "agent": welcomes[connection.source].agent_id,
                    "inventory": to_plain(welcomes[connection.source].inventory),
                }
                for connection in session.connections
            ],
            "jobs": jobs,
            "results": [{"server": name, **to_plain(r)} for name, r in self.kernel_results],
            "models": [
                {"server": name, **to_plain(result), "efficiency": to_plain(scaled)}
                for (name, result), scaled in zip(self.model_results, scalings, strict=True)
            ],
        }


def _describe(name: str, welcome: Welcome) -> str:
    inventory = welcome.inventory
    gpus = f"{len(inventory.gpus)}× {inventory.gpus[0].name}" if inventory.gpus else "no GPU"
    return f"{name}: {gpus}"


def _describe_plan(plan: Plan) -> str:
    if isinstance(plan, ModelPlan):
        return f"{plan.framework}, models {', '.join(plan.models)}"
    return f"{plan.framework}, set {plan.shape_set}"


def _describe_rendezvous(campaign: Campaign) -> str:
    last = campaign.steps[-1].parts[0].plan.cluster
    if last is None:
        return ""
    where = ", ".join(last.peers) or f"{last.master_addr}:{last.master_port}"
    unit = "TensorFlow workers" if last.peers else "ranks"
    return f": {last.world} {unit}; rendezvous {where}"
