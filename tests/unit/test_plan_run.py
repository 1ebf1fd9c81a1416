"""A PlanRun with members that only record what they were asked: plans in order, the first
that does not end `done` stops the rest, cancel stops the run, a bad layout stops it before."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from dltui.client.plan_run import PlanRun
from dltui.client.target import Target
from dltui.plans.check import PlanError
from dltui.protocol.bench_plans import KernelPlan, ModelPlan, Plan
from dltui.protocol.messages import JobEnd, Welcome

GEMM = KernelPlan(kinds=["gemm"], shape_set="tiny")
CONV = KernelPlan(kinds=["conv"], shape_set="tiny")


@dataclass
class Member:
    source: str
    target: Target = field(default_factory=lambda: Target("local"))
    welcome: Welcome | None = None
    started: list[Plan] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)

    async def run_plan(self, plan: Plan, job: str | None = None) -> str:
        self.started.append(plan)
        return f"{self.source}-{len(self.started)}"

    async def cancel(self, job: str) -> None:
        self.cancelled.append(job)


async def started(run: PlanRun, plan: int, jobs: int) -> None:
    while run.index != plan or len(run.jobs()) < jobs:
        await asyncio.sleep(0)  # yield to the run until it has sent that plan's jobs


async def test_plans_run_in_order_and_a_failure_stops_the_rest():
    a, b = Member("a"), Member("b")
    run = PlanRun([(GEMM, False), (CONV, False), (GEMM, False)], [a, b])
    going = asyncio.create_task(run.run())
    await started(run, plan=0, jobs=2)
    for member in (a, b):
        run.observe(member.source, JobEnd(f"{member.source}-1", "done"))
    await started(run, plan=1, jobs=2)
    assert a.started == [GEMM, CONV]
    run.observe("a", JobEnd("a-2", "failed", "boom", wall=2.0))
    run.observe("b", JobEnd("b-2", "done"))
    assert await going == "failed" == run.state
    assert a.started == [GEMM, CONV] and run.failures == ["a failed: boom"]


async def test_cancel_cancels_the_running_jobs_and_starts_nothing_more():
    a = Member("a")
    run = PlanRun([(GEMM, False), (CONV, False)], [a])
    going = asyncio.create_task(run.run())
    await started(run, plan=0, jobs=1)
    await run.cancel()
    assert a.cancelled == ["a-1"]
    run.observe("a", JobEnd("a-1", "cancelled"))
    assert await going == "cancelled" and a.started == [GEMM]


def test_a_plan_that_cannot_run_on_these_members_is_refused_before_anything_starts():
    a = Member("a")
    with pytest.raises(PlanError, match="at least two agents"):
        PlanRun([(GEMM, False), (ModelPlan(gpus=[0]), True)], [a])
    assert a.started == []
