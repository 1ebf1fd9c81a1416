"""The launcher driven by Pilot against a real local agent: a run started from it reaches the
agent, shows a bar per server, and its results land in the results view."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

from textual.widgets import Input, RadioButton, Select, SelectionList

from dltui.client.target import parse_target
from dltui.tui import create_app
from dltui.tui.screens.export import ExportScreen
from dltui.tui.screens.launcher import LauncherScreen
from dltui.tui.screens.results import ResultsScreen
from tests.conftest import require
from tests.tui.pilot import LIVE_CPU, screen_text, wait_for_text, wait_until

require("torch")

LIVE = LIVE_CPU


async def choose_plan(pilot, screen: LauncherScreen, key: str) -> None:
    """Press a plan's button; back once the launcher's choice is that plan (the button's
    change reaches the launcher a moment later)."""
    (button,) = [b for b in screen.query(RadioButton) if b.name == key]
    button.value = True
    await wait_until(pilot, lambda: screen.choice().plan == key)


async def type_plan_file(pilot, launcher: LauncherScreen, path: Path) -> None:
    """A plan file's name in its box; back once the launcher has chosen the file, as a key
    typed there makes it do (the box's change is handled a moment later: `s` pressed before
    it started the plan chosen before)."""
    launcher.query_one("#plan-file", Input).value = str(path)
    await wait_until(pilot, lambda: launcher.choice().plan == "file")


async def open_launcher(pilot) -> LauncherScreen:
    await wait_for_text(pilot, LIVE, timeout=30)
    await pilot.press("b")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, LauncherScreen))
    return pilot.app.screen


async def run_plan_file(pilot, path: Path) -> None:
    """Open the launcher, start the plan in `path` and wait for the run to end well."""
    launcher = await open_launcher(pilot)
    await type_plan_file(pilot, launcher, path)
    await pilot.press("s")
    await wait_until(pilot, lambda: pilot.app.bench_run is not None)
    run = pilot.app.bench_run
    await wait_until(pilot, lambda: run.state != "running", timeout=180)
    assert run.state == "done", run.failures


async def test_a_run_from_the_launcher_reaches_the_agent_and_its_results_show(tmp_path) -> None:
    app = create_app([parse_target("local")])
    async with app.run_test(size=(120, 40)) as pilot:
        launcher = await open_launcher(pilot)
        servers = launcher.query_one("#servers", SelectionList)
        assert servers.selected == ["local"]  # the live server, chosen already
        await choose_plan(pilot, launcher, "smoke")
        launcher.query_one("#device", Select).value = "cpu"
        await pilot.press("s")
        await wait_until(pilot, lambda: app.bench_run is not None)
        run = app.bench_run
        assert run is not None and run.members == app.session.connections
        await wait_for_text(pilot, r"━+", timeout=30)  # a progress bar for the server
        await wait_until(pilot, lambda: run.state != "running", timeout=90)
        assert run.state == "done", run.failures
        text = await wait_for_text(pilot, r"Smoke test · done")
        assert socket.gethostname()[:20] in text
        (job,) = app.fleet.servers["local"].jobs.values()
        assert job.state == "done" and len(job.results) == job.total == 19

        await pilot.press("v")
        await wait_until(pilot, lambda: isinstance(app.screen, ResultsScreen))
        text = await wait_for_text(pilot, r"gemm 64x64x64 NN fwd fp32\s+[\d.]+ [GT]FLOP/s")
        assert "rnn lstm h64 n4 t8 fwd+bwd fp32" in text
        results = app.screen
        assert results.comparison.columns == [f"{socket.gethostname()} · CPU"]  # no GPU here

        # Export what is shown, to a name the user types; a second time the file exists.
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, ExportScreen))
        box = app.screen.query_one(Input)
        box.value = str(tmp_path / "smoke.json")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ResultsScreen))
        records = json.loads((tmp_path / "smoke.json").read_text())
        assert len(records) == 19 and {r["kind"] for r in records} == {"gemm", "conv", "rnn"}
        assert all(
            r["column"] == f"{socket.gethostname()} · CPU" and r["device"] == "cpu" for r in records
        )
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, ExportScreen))
        app.screen.query_one(Input).value = str(tmp_path / "smoke.json")
        await pilot.press("enter")
        text = await wait_for_text(pilot, "exists; choose another name")
        assert isinstance(app.screen, ExportScreen)

        # A new run (n) starts from the form as this one was: Device went back to auto.
        await pilot.press("escape", "escape")
        await wait_until(pilot, lambda: app.screen is app.screen_stack[0])
        await pilot.press("b")
        await wait_for_text(pilot, "n: new run")
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, LauncherScreen))
        again = app.screen
        assert again.query_one("#device", Select).value == "cpu"
        assert [b.name for b in again.query(RadioButton) if b.value] == ["smoke"]


async def test_a_bad_choice_says_why_and_keeps_the_form(tmp_path) -> None:
    app = create_app([parse_target("local")])
    async with app.run_test(size=(100, 30)) as pilot:
        launcher = await open_launcher(pilot)
        await choose_plan(pilot, launcher, "scale_out")
        await pilot.press("s")
        await wait_for_text(pilot, "needs at least two agents")
        assert app.bench_run is None

        bad = tmp_path / "bad.toml"
        bad.write_text("[kernels]\nset = 'enormous'\n")
        await type_plan_file(pilot, launcher, bad)  # typing a file name chooses the file
        await pilot.press("s")
        # The error names the file, so where it wraps depends on pytest's tmp path.
        await wait_for_text(pilot, r"unknown[\s│]+shape[\s│]+set[\s│]+'enormous'")
        await type_plan_file(pilot, launcher, tmp_path / "missing.toml")
        await pilot.press("s")
        await wait_for_text(pilot, "cannot read plan")
        assert app.bench_run is None and launcher.query_one("#form").display


async def test_x_cancels_a_run_on_the_agent() -> None:
    app = create_app([parse_target("local")])
    async with app.run_test(size=(100, 30)) as pilot:
        launcher = await open_launcher(pilot)
        # An hour on this CPU: it is still running when cancelled.
        await choose_plan(pilot, launcher, "full")
        launcher.query_one("#device").value = "cpu"
        await pilot.press("s")
        await wait_until(pilot, lambda: app.bench_run is not None and app.bench_run.jobs())
        server = app.fleet.servers["local"]
        await wait_until(pilot, lambda: server.latest_job is not None, timeout=30)
        await pilot.press("x")
        run = app.bench_run
        await wait_until(pilot, lambda: run.state == "cancelled", timeout=30)
        assert server.latest_job.state == "cancelled"
        await wait_for_text(pilot, r"DeepBench full · cancelled")
        await wait_for_text(pilot, "n New run")  # the key for what can be done next
        # and none for what cannot (the footer's keys are redrawn one refresh apart)
        await wait_until(pilot, lambda: "Cancel run" not in screen_text(app))


async def test_a_training_plan_from_a_file_runs_and_its_figures_show(tmp_path) -> None:
    plan = tmp_path / "cnn.toml"
    plan.write_text(
        '[models]\nmodels = ["googlenet"]\ngpus = [1, 2]\ndevice = "cpu"\nimage_size = 32\n'
        "batch = 2\nsteps = 3\nwarmup = 1\n"
    )
    app = create_app([parse_target("local")])
    async with app.run_test(size=(120, 40)) as pilot:
        await run_plan_file(pilot, plan)
        (job,) = app.fleet.servers["local"].jobs.values()
        # Waited for: once, under load, the run had ended before the job's results were in.
        await wait_until(pilot, lambda: len(job.model_results) == 2)
        assert [(r.model, r.gpus, r.error) for r in job.model_results] == [
            ("googlenet", 1, None),
            ("googlenet", 2, None),
        ]
        await pilot.press("v")
        await wait_until(pilot, lambda: isinstance(app.screen, ResultsScreen))
        # A column per server and GPU count, a row per training configuration.
        host = socket.gethostname()[:12]
        text = await wait_for_text(
            pilot, r"googlenet fp32 batch 2 32px\s+[\d.,]+ img/s\s+[\d.,]+ img/s"
        )
        assert f"{host} · 1 proc" in text and f"{host} · 2 procs" in text


async def test_a_transformer_plan_shows_tokens_mfu_and_the_attention_backend(tmp_path) -> None:
    require("torch")
    plan = tmp_path / "transformers.toml"
    plan.write_text(
        '[kernels]\nkinds = ["attention"]\nshape_set = "tiny"\ndevice = "cpu"\n'
        'precisions = ["fp32"]\niterations = 5\nmax_seconds = 0.2\n\n'
        '[models]\nmodels = ["gpt-tiny"]\ndevice = "cpu"\nsteps = 3\nwarmup = 1\n'
    )
    app = create_app([parse_target("local")])
    async with app.run_test(size=(150, 40)) as pilot:
        await run_plan_file(pilot, plan)
        jobs = list(app.fleet.servers["local"].jobs.values())
        await wait_until(pilot, lambda: sum(len(j.model_results) for j in jobs) == 1)
        await pilot.press("v")
        await wait_until(pilot, lambda: isinstance(app.screen, ResultsScreen))
        # The GPT row counts tokens (a CPU has no dense peak: no MFU); attention names the
        # backend its search chose.
        text = await wait_for_text(pilot, r"gpt-tiny fp32 batch 16 seq 64 ddp\s+[\d,]+ tok/s")
        assert "MFU" not in text
        assert re.search(r"attention b2 h2 s64 d32 fwd fp32 +[\d.]+ TFLOP/s ±[\d.]+% \d+ it "
                         r"(flash|math)", text)  # fmt: skip
        await pilot.press("p")
        text = await wait_for_text(
            pilot, r"gpt-tiny fp32 batch 16 seq 64 ddp ×1 proc +[\d.]+ +– +– +[\d,]+ "
        )
