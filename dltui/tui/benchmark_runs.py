"""A benchmark run from the app, start to end: the launcher or `:bench PLAN` starts one, its
progress shows on `b` and in the title line, `x` cancels it, and its results open on `v`
(the phases, the what-if and an export from the palette).

One run at a time: `bench_run` is the run the launcher started, kept after it ends (its
progress and results stay on show) until the user starts a new one.
"""

from __future__ import annotations

from textual.notifications import SeverityLevel

from dltui.plans.check import PlanError
from dltui.tui.app_part import AppPart
from dltui.tui.command_line import PLAN_WORDS
from dltui.tui.launch_plans import Choice, make_launch
from dltui.tui.run import BenchmarkRun
from dltui.tui.screens.launcher import LauncherScreen, Start
from dltui.tui.screens.progress import Next, ProgressScreen
from dltui.tui.screens.results import ResultsScreen
from dltui.tui.screens.whatif import WhatIfScreen


class BenchmarkRuns(AppPart):
    """Starting, following and cancelling `DltuiApp`'s benchmark run, and its results."""

    bench_run: BenchmarkRun | None = None
    """The run started from the launcher, until the user starts a new one."""
    last_choice: Choice | None = None
    """The launcher's form as the last run was started from it."""

    # --- starting a run ----------------------------------------------------------------------

    def action_launch(self) -> None:
        """The launcher's form, or the progress of the run it started."""
        if self.bench_run is None:
            self.push_screen(LauncherScreen(self.fleet, self.last_choice), self._start)
        else:
            self.push_screen(ProgressScreen(self.bench_run, self.fleet), self._after_progress)

    def action_bench(self, words: str = "") -> None:
        """`:bench PLAN` starts a plan on every live server; alone, the launcher."""
        if not words:
            self.action_launch()
            return
        plan = PLAN_WORDS.get(words.lower(), "file" if words.endswith(".toml") else "")
        if not plan:
            self.notify(
                f"no plan '{words}': {', '.join(PLAN_WORDS)} or a .toml file",
                severity="warning",
                markup=False,
            )
            return
        live = [s for s, server in self.fleet.servers.items() if server.link == "live"]
        inventories = [self.fleet.servers[s].inventory for s in live]
        choice = Choice(plan, plan_file=words if plan == "file" else "")
        try:
            launch = make_launch(choice, [i for i in inventories if i is not None])
        except PlanError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return
        self._start(Start(launch, live, choice))

    def _start(self, start: Start | None) -> None:
        """What the launcher returned: a run to start, and its progress to show."""
        if start is None:
            return
        self.last_choice = start.choice
        try:
            self.start_run(start)
        except (PlanError, RuntimeError) as exc:
            self.notify(f"the run could not start: {exc}", severity="error", markup=False)
            return
        self.action_launch()

    def _after_progress(self, next_step: Next | None) -> None:
        if next_step == "new":
            self.bench_run = None
            self.action_launch()
        elif next_step == "results":
            self.action_results()

    def start_run(self, start: Start) -> BenchmarkRun:
        """Start the launch's plans on these servers; RuntimeError when one is not live or a
        run is going, PlanError when a plan cannot run on them."""
        if self.bench_run is not None and self.bench_run.state == "running":
            raise RuntimeError("a run is already going: cancel it (x) or wait for it")
        by_source = {connection.source: connection for connection in self.session.connections}
        members = []
        for source in start.sources:
            connection = by_source.get(source)
            if connection is None or connection.state != "live" or connection.welcome is None:
                raise RuntimeError(f"{source} is not live")
            members.append(connection)
        launch = start.launch
        run = BenchmarkRun(launch.plans, members, description=launch.description)
        self.bench_run = run
        self.run_worker(self._run(run), name="benchmark run", group="benchmark")
        return run

    async def _run(self, run: BenchmarkRun) -> None:
        state = await self.session.run_plans(run)
        for screen in self.screen_stack:  # nothing left to cancel, on the main screen's footer
            screen.refresh_bindings()  # too, which shows under the run's progress
        severity: SeverityLevel = "information" if state == "done" else "warning"
        self.notify(
            f"{run.description}: {state} — press v for the results",
            severity=severity,
            timeout=10,
            markup=False,
        )

    # --- while it runs -----------------------------------------------------------------------

    def _run_status(self) -> str:
        """' · ▶ Quick kernels · running 40%' for the title line; '' without a run."""
        run = self.bench_run
        if run is None:
            return ""
        done = sum(p.fraction for p in run.progress(self.fleet)) / max(len(run.members), 1)
        how = f" {done:.0%}" if run.state == "running" else ""
        return f" · ▶ {run.status_line()}{how}"

    async def action_cancel_run(self) -> None:
        if self.bench_run is not None and self.bench_run.state == "running":
            self.notify("cancelling the run …")
            await self.bench_run.cancel()

    # --- results -----------------------------------------------------------------------------

    def action_results(self) -> None:
        if not isinstance(self.screen, ResultsScreen):
            self.push_screen(ResultsScreen(self.fleet, self.view.timebase))

    def action_phases(self) -> None:
        self.push_screen(ResultsScreen(self.fleet, self.view.timebase, tab="phases"))

    def action_whatif(self) -> None:
        if not isinstance(self.screen, WhatIfScreen):
            self.push_screen(WhatIfScreen(self.fleet, self.view.timebase.replay))

    def action_export(self) -> None:
        screen = ResultsScreen(self.fleet, self.view.timebase)
        self.push_screen(screen)
        self.call_after_refresh(screen.action_export)
