"""A campaign: one benchmark plan over the agents a user chose, run the way the plan asks.

- Side by side: each agent runs the plan on its own (one agent is the simplest case).
- Across (scale-out): one run over all the agents. The client hands out ranks and the
  rendezvous, the frameworks move the data. If one agent's part fails, the others are cancelled
  at once, since they would wait in a collective for a dead peer, and the failure names it.
- A model plan run across servers first measures what its scaling is judged against: one GPU
  and one whole server, on the first agent (`baselines`).

Members are anything that can start and cancel a job on an agent (a client session's
`AgentConnection`s). A campaign learns how jobs go only from the frames it is shown
(`observe`), so `dltui bench`, `dltui record` and the TUI's launcher run plans the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

from dltui.client.scale_out import assign_ranks, local_ranks
from dltui.client.target import Target
from dltui.plans.check import PlanError
from dltui.plans.names import COLLECTIVES
from dltui.protocol.bench_plans import KernelPlan, ModelPlan, Plan
from dltui.protocol.inventory import Inventory
from dltui.protocol.messages import ConnectionState, JobEnd, JobState, Message, Welcome

SEVERITY: tuple[JobState, ...] = ("failed", "refused", "cancelled", "done")
"""Worst first: a campaign ends as its worst job did."""


class Member(Protocol):
    source: str
    target: Target
    welcome: Welcome | None
    """The agent's last welcome: its inventory sizes the ranks of a run across servers."""

    async def run_plan(self, plan: Plan, job: str | None = None) -> str: ...

    async def cancel(self, job: str) -> None: ...


@dataclass
class Part:
    """One job of a step, on one member."""

    member: Member
    plan: Plan
    job: str | None = None
    end: JobEnd | None = None
    cancel_sent: bool = False
    lost: bool = False
    """Its agent went away mid-job: the end is the campaign's word, not the agent's."""


@dataclass
class Step:
    """Jobs that run together: one per member side by side, or the parts of one run across."""

    label: str
    parts: list[Part]
    across: bool

    @property
    def state(self) -> JobState | Literal["waiting", "running"]:
        if all(part.end is not None for part in self.parts):
            return self.ended()
        return "running" if any(part.job for part in self.parts) else "waiting"

    def ended(self) -> JobState:
        """How the parts that have ended did, the worst of them."""
        return worst(part.end.state for part in self.parts if part.end is not None)


def worst(states: Iterable[JobState]) -> JobState:
    return min(states, key=SEVERITY.index, default="done")


def check_layout(plan: Plan, members: int, across: bool) -> None:
    """PlanError when the plan cannot run this way, before any agent is asked."""
    if not members:
        raise PlanError("a campaign needs at least one agent")
    if across and members < 2:
        raise PlanError("a run across servers needs at least two agents")
    if across and isinstance(plan, KernelPlan) and set(plan.kinds) - set(COLLECTIVES):
        raise PlanError("only the collectives run across servers; run the other kinds side by side")
    if across and isinstance(plan, ModelPlan) and len(plan.gpus) != 1:
        raise PlanError("a run across servers uses one GPU count per server (0: all), not a sweep")


def is_across(plan: Plan, members: int) -> bool:
    """The default: collectives over several agents run across them; anything else runs side
    by side unless asked."""
    return members > 1 and isinstance(plan, KernelPlan) and bool(set(plan.kinds) & set(COLLECTIVES))


def server_work(
    plan: Plan, across: bool, inventories: list[Inventory], baselines: bool = True
) -> list[list[Plan]]:
    """What each server runs of the plan, in order: the plan itself (its share of one run
    across), and first on the first server of a model run across, what that run's scaling is
    judged against: one GPU and that whole server (one run where they are the same)."""
    work: list[list[Plan]] = [[plan] for _ in inventories]
    if across and baselines and isinstance(plan, ModelPlan):
        counts = list(dict.fromkeys([1, local_ranks(plan, inventories[0])]))
        work[0].insert(0, replace(plan, gpus=counts))
    return work


@dataclass
class Campaign:
    plan: Plan
    members: list[Member]
    across: bool = False
    rendezvous: tuple[str, int] | None = None
    baselines: bool = True
    steps: list[Step] = field(default_factory=list)
    cancelled: bool = False
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        """The steps are made now: every member must have said who it is (its welcome)."""
        check_layout(self.plan, len(self.members), self.across)
        self.steps = self._make_steps()

    def observe(self, source: str, message: Message) -> None:
        """Every frame from every member: job ends, and agents lost mid-job."""
        if isinstance(message, JobEnd):
            for part in self._running(source):
                if part.job == message.job:
                    part.end = message
                    self._changed.set()
        elif isinstance(message, ConnectionState) and message.state in ("offline", "auth_failed"):
            for part in self._running(source):
                why = f"lost the agent: {message.detail or message.state}"
                part.end = JobEnd(part.job or "", "failed", why, message.wall)
                part.lost = True
                self._changed.set()

    def jobs(self) -> set[str]:
        """The jobs started so far, on every member: the frames that belong to this campaign."""
        return {part.job for step in self.steps for part in step.parts if part.job}

    def _running(self, source: str) -> list[Part]:
        return [
            part
            for step in self.steps
            for part in step.parts
            if part.member.source == source and part.job is not None and part.end is None
        ]

    async def run(self) -> JobState:
        """Run every step in order; stop at the first that does not end `done`."""
        states: list[JobState] = []
        for step in self.steps:
            if self.cancelled:
                break
            states.append(await self._run_step(step))
            if states[-1] != "done":
                break
        return worst(states)

    async def cancel(self) -> None:
        """Cancel every running job (and run no further step); the jobs' ends still arrive."""
        self.cancelled = True
        await asyncio.gather(*(self._cancel(part) for step in self.steps for part in step.parts))

    def failures(self, name: Callable[[Member], str] = lambda member: member.source) -> list[str]:
        """Why the parts that failed or were refused did, first first, each named by `name`
        (the first is usually the cause of the others)."""
        return [f"{name(part.member)} {end.state}: {end.error}" for part, end in self._failed()]

    @property
    def lost_agent(self) -> bool:
        """Whether the first failure was an agent lost mid-job (the others followed from it)."""
        failed = self._failed()
        return bool(failed) and failed[0][0].lost

    def _failed(self) -> list[tuple[Part, JobEnd]]:
        ended = [
            (part, part.end)
            for step in self.steps
            for part in step.parts
            if part.end is not None and part.end.state in ("failed", "refused")
        ]
        return sorted(ended, key=lambda pair: pair[1].wall)

    def _make_steps(self) -> list[Step]:
        plan, members = self.plan, self.members
        if not self.across:
            return [Step("side by side", [Part(member, plan) for member in members], False)]
        inventories = []
        for member in members:
            if member.welcome is None:
                raise RuntimeError(f"{member.source} has not said who it is yet")
            inventories.append(member.welcome.inventory)
        first = members[0]
        *baselines, _ = server_work(plan, True, inventories, self.baselines)[0]
        steps = [Step(f"baseline on {first.source}", [Part(first, b)], False) for b in baselines]
        targets = [member.target for member in members]
        plans = assign_ranks(plan, targets, inventories, self.rendezvous)
        parts = [Part(member, part) for member, part in zip(members, plans, strict=True)]
        steps.append(Step(f"across {len(members)} servers", parts, True))
        return steps

    async def _run_step(self, step: Step) -> JobState:
        for part in step.parts:
            try:
                part.job = await part.member.run_plan(part.plan)
            except (ConnectionError, OSError) as exc:
                part.job = ""
                part.end = JobEnd("", "failed", f"cannot start the job: {exc}")
            if self.cancelled:  # cancelled while the agent was taking it: it has a name now
                await self._cancel(part)
        while True:
            if step.across and any(
                part.end is not None and part.end.state in ("failed", "refused")
                for part in step.parts
            ):
                await asyncio.gather(*(self._cancel(part) for part in step.parts))
            if all(part.end is not None for part in step.parts):
                break
            self._changed.clear()
            await self._changed.wait()
        return step.ended()

    async def _cancel(self, part: Part) -> None:
        if part.job and part.end is None and not part.cancel_sent:
            part.cancel_sent = True
            try:
                await part.member.cancel(part.job)
            except (ConnectionError, OSError):
                pass  # the agent is gone: its ConnectionState frame ends the part
