"""One headless run, as `dltui bench` and `dltui record --plan` make it: a client session, its
plans run, every result collected by one sink, the assertions checked, an exit status.

Library code below this does not print; what a person reads is said here, through `say`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from dltui.client.plan_run import PlanRun
from dltui.client.session import ClientSession
from dltui.commands.exit_status import ASSERTION_FAILED, JOB_EXIT, OK, UNREACHABLE
from dltui.formatting import counted
from dltui.plans.assertions import Assertion, Baseline, cases, failures
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.protocol.messages import JobResult, JobState, Message


class Say(Protocol):
    """How a command prints a line of the run's outcome; `note` for one that is not a failure
    (`dltui bench` marks those with `#` in its table)."""

    def __call__(self, line: str, *, note: bool = False) -> None: ...


class Results:
    """A sink: every result of this run's jobs, by source, as it arrives (an agent tells every
    client of every job: another client's results are none of this run's)."""

    def __init__(self) -> None:
        self.kernels: list[tuple[str, KernelResult]] = []
        self.models: list[tuple[str, ModelResult]] = []
        self.run: PlanRun | None = None

    def __call__(self, source: str, message: Message) -> None:
        if isinstance(message, JobResult) and self.run and message.job in self.run.jobs():
            if message.result is not None:
                self.kernels.append((source, message.result))
            if message.model is not None:
                self.models.append((source, message.model))


async def run_plans_headless(
    session: ClientSession,
    plans: Callable[[], PlanRun],
    say: Say,
    assertions: Sequence[Assertion] = (),
    baseline: Baseline | None = None,
    ended: Callable[[PlanRun, JobState], Awaitable[None]] | None = None,
) -> int:
    """Wait for every agent's welcome (Unreachable names one that failed), run the plans that
    `plans()` builds from what the welcomes said, let `ended` say how the run ended, then check
    the assertions against every result: the exit status. A run that did not end `done` exits
    as it ended, unchecked, or as unreachable where an agent went away mid-job."""
    results = Results()
    session.subscribe(results)
    try:
        await session.welcomed()
        run = results.run = plans()
        state = await session.run_plans(run)
        if ended is not None:
            await ended(run, state)
    finally:
        session.unsubscribe(results)
    if state != "done":
        return UNREACHABLE if run.lost_agent else JOB_EXIT[state]
    return check_assertions(assertions, results, session.names(), say, baseline)


def check_assertions(
    assertions: Sequence[Assertion],
    results: Results,
    names: dict[str, str],
    say: Say,
    baseline: Baseline | None = None,
) -> int:
    """Say each failure in one line; ASSERTION_FAILED when there was one."""
    if not assertions:
        return OK
    kernels = [(names.get(source, source), result) for source, result in results.kernels]
    models = [(names.get(source, source), result) for source, result in results.models]
    lines = failures(assertions, cases(kernels, models, baseline))
    for line in lines:
        say(line)
    if lines:
        return ASSERTION_FAILED
    say(f"{counted(len(assertions), 'assertion')} passed", note=True)
    return OK
