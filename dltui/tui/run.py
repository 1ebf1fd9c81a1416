"""A launched run: its plans, one `Campaign` after the other over the app's own connections.

The campaign decides what runs where and learns how jobs go from the frames the app hands
it, exactly as `dltui bench` and `dltui record` run plans; this only sequences the plans and
says how far the run is, per server, from the fleet's view of each job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from dltui.client.campaign import Campaign, Member, worst
from dltui.fleet.state import Fleet
from dltui.protocol.messages import JobState, Message
from dltui.tui.plans import Launch

RunState = JobState | Literal["running"]


@dataclass
class ServerProgress:
    source: str
    fraction: float
    """0–1 over its current job's cases, a training run's own progress included."""
    label: str
    state: str
    """running, waiting (for its part of a later step), or how its last job ended."""


@dataclass
class BenchmarkRun:
    launch: Launch
    members: list[Member]
    state: RunState = "running"
    campaign: Campaign | None = None
    index: int = 0
    """Which of the launch's plans is running (or ran last)."""
    failures: list[str] = field(default_factory=list)
    cancelled: bool = False

    def observe(self, source: str, message: Message) -> None:
        if self.campaign is not None:
            self.campaign.observe(source, message)

    async def run(self) -> RunState:
        """Each plan in turn; a plan that does not end `done` stops the rest."""
        states: list[JobState] = []
        for index, (plan, across) in enumerate(self.launch.plans):
            self.index = index
            if self.cancelled:
                break
            self.campaign = campaign = Campaign(plan, list(self.members), across)
            states.append(await campaign.run())
            self.failures += campaign.failures()
            if states[-1] != "done":
                break
        self.state = "cancelled" if self.cancelled and not states else worst(states)
        return self.state

    async def cancel(self) -> None:
        self.cancelled = True
        if self.campaign is not None:
            await self.campaign.cancel()

    def jobs(self) -> set[str]:
        campaign = self.campaign
        if campaign is None:
            return set()
        return {part.job for step in campaign.steps for part in step.parts if part.job}

    def progress(self, fleet: Fleet) -> list[ServerProgress]:
        """Per member: how far its part of the current plan is."""
        found = []
        campaign = self.campaign
        for member in self.members:
            source = member.source
            parts = [] if campaign is None else [
                part for step in campaign.steps for part in step.parts
                if part.member.source == source and part.job
            ]  # fmt: skip
            server = fleet.servers.get(source)
            job = server.jobs.get(parts[-1].job or "") if parts and server else None
            if job is None:
                found.append(ServerProgress(source, 0.0, "", "waiting"))
                continue
            done = job.done + (job.fraction or 0.0) if job.state == "running" else job.total
            fraction = done / job.total if job.total else 0.0
            found.append(ServerProgress(source, min(fraction, 1.0), job.label, job.state))
        return found

    def words(self) -> str:
        """'Quick kernels: plan 1 of 2 · running' for the app's title line."""
        plans = len(self.launch.plans)
        where = f" · plan {self.index + 1} of {plans}" if plans > 1 else ""
        return f"{self.launch.description}{where} · {self.state}"
