"""A run started from the launcher: the client's `PlanRun` over the app's own connections, and
how far it is, per server, from the fleet's view of each job, for the progress screen and the
title line."""

from __future__ import annotations

import time
from dataclasses import dataclass

from dltui.client.plan_run import PlanRun
from dltui.fleet.state import Fleet


@dataclass
class ServerProgress:
    source: str
    fraction: float
    """0–1 over its current job's cases, a training run's own progress included."""
    label: str
    state: str
    """running, waiting (for its part of a later step), or how its last job ended."""
    remaining: float | None = None
    """Seconds its job still needs at the pace so far."""


@dataclass(eq=False)
class BenchmarkRun(PlanRun):
    description: str = ""
    """What the launcher called it: 'Quick kernels', a plan file's name."""

    def progress(self, fleet: Fleet) -> list[ServerProgress]:
        """Per member: how far its part of the current plan is."""
        found = []
        for member in self.members:
            source = member.source
            parts = [
                part for step in self.campaign.steps for part in step.parts
                if part.member.source == source and part.job
            ]  # fmt: skip
            server = fleet.servers.get(source)
            job = server.jobs.get(parts[-1].job or "") if parts and server else None
            if job is None:
                found.append(ServerProgress(source, 0.0, "", "waiting"))
                continue
            left = job.remaining(time.time())
            found.append(ServerProgress(source, job.progress(), job.label, job.state, left))
        return found

    def status_line(self) -> str:
        """'Quick kernels: plan 1 of 2 · running' for the app's title line."""
        plans = len(self.plans)
        where = f" · plan {self.index + 1} of {plans}" if plans > 1 else ""
        return f"{self.description}{where} · {self.state}"
