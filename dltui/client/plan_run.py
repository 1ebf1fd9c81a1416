"""A run: plans one after the other over the same agents, each plan a `Campaign`.

What `dltui bench` (one plan), `dltui record --plan FILE` and the TUI's launcher start alike.
A plan that does not end `done` stops the rest; the run ends as its worst plan did. It learns
how jobs go only from the frames the session shows it (`observe`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from dltui.client.campaign import Campaign, Member, worst
from dltui.protocol.bench_plans import Plan
from dltui.protocol.messages import JobState, Message

RunState = JobState | Literal["running"]


def by_source(member: Member) -> str:
    return member.source


@dataclass(eq=False)  # a run is itself, not its fields
class PlanRun:
    """Made with every member welcomed: each plan's campaign is laid out now, so a plan that
    cannot run on these members is a PlanError before anything starts."""

    plans: list[tuple[Plan, bool]]
    """Each plan, and whether it runs as one run across the members (else side by side)."""
    members: Sequence[Member]
    rendezvous: tuple[str, int] | None = None
    baselines: bool = True
    name: Callable[[Member], str] = by_source
    """How failures name a member."""
    state: RunState = "running"
    campaigns: list[Campaign] = field(init=False)
    """One per plan, in order."""
    index: int = 0
    """Which plan is running (or ran last)."""
    failures: list[str] = field(default_factory=list)
    """Why jobs failed or were refused, each plan's first first."""
    cancelled: bool = False

    def __post_init__(self) -> None:
        self.campaigns = [
            Campaign(plan, list(self.members), across, self.rendezvous, self.baselines)
            for plan, across in self.plans
        ]

    @property
    def campaign(self) -> Campaign:
        return self.campaigns[self.index]

    def observe(self, source: str, message: Message) -> None:
        self.campaign.observe(source, message)

    async def run(self) -> JobState:
        """Each plan in turn."""
        states: list[JobState] = []
        for index, campaign in enumerate(self.campaigns):
            if self.cancelled:
                break
            self.index = index
            states.append(await campaign.run())
            self.failures += campaign.failures(self.name)
            if states[-1] != "done":
                break
        self.state = "cancelled" if self.cancelled and not states else worst(states)
        return self.state

    async def cancel(self) -> None:
        """Cancel the running plan's jobs and start no further plan."""
        self.cancelled = True
        await self.campaign.cancel()

    @property
    def lost_agent(self) -> bool:
        """Whether the run stopped because an agent went away mid-job."""
        return self.campaign.lost_agent

    def jobs(self) -> set[str]:
        """The running plan's jobs."""
        return self.campaign.jobs()
