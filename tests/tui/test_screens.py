"""The results view, the detail screen, the filter and the theme, driven by Pilot from the real
recordings and from frames an agent would send."""

from __future__ import annotations

import re
import time
from dataclasses import replace
from typing import cast

from textual.pilot import Pilot
from textual.widgets import RadioButton

from dltui.fleet.compare import REFERENCE
from dltui.protocol.bench_results import KernelResult
from dltui.protocol.messages import JobProgress, JobResult, Sample
from dltui.protocol.samples import GpuProcess, GpuSample, HostSample
from dltui.tui import create_app
from dltui.tui.replay_app import create_replay_app
from dltui.tui.screens.detail import DetailScreen
from dltui.tui.screens.launcher import LauncherScreen
from dltui.tui.screens.results import ResultsScreen
from dltui.tui.widgets.phase_table import PhaseTable
from dltui.tui.widgets.server_strip import ServerStrip
from tests.conftest import FIXTURES
from tests.fakes.messages import gpu_box_messages
from tests.tui.pilot import replayed_to_the_end, screen_text, wait_for_text, wait_until

H200, CPU = FIXTURES / "h200x2-kernels.dlrec", FIXTURES / "cpu-kernels.dlrec"


async def results_at_the_end(pilot: Pilot) -> ResultsScreen:
    """The results view (`v`) of a replay app paused at its recordings' end."""
    await replayed_to_the_end(pilot)
    await pilot.press("v")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, ResultsScreen))
    return cast(ResultsScreen, pilot.app.screen)


async def test_results_compare_servers_against_a_chosen_baseline_and_sort() -> None:
    app = create_replay_app([H200, CPU])
    async with app.run_test(size=(170, 40)) as pilot:
        results = await results_at_the_end(pilot)
        text = await wait_for_text(pilot, r"h200x2-kernels +cpu-kernels")
        # Against DeepBench's V100 figure, which the result carries; with its spread and count.
        assert re.search(
            r"gemm 5124x9124x1760 NN fwd bf16 +220.7 +TFLOP/s ±\d\.\d% \d+ it 2.34×", text
        )
        assert results.baseline == REFERENCE

        await pilot.press("b")  # the first server is the baseline: its own column has no ratio
        # The CPU box ran the same GEMM: its figure and its ratio to the H200's, side by side
        # (waited for: the heading can be drawn a frame before the rows).
        side_by_side = (r"gemm 5124x9124x1760 NN fwd bf16 +220.7 +TFLOP/s ±\d\.\d% \d+ it +"
                        r"0\.\d+ +TFLOP/s ±\d+\.\d% \d+ it 0\.00\d\d?×")  # fmt: skip
        text = await wait_for_text(pilot, side_by_side)
        assert "ratio to h200x2-kernels" in text and "◆ h200x2-kernels" in text

        # The columns are as wide as their cells once drawn, not once the table next idles (in a
        # busy suite run that had not come in ten seconds): read before the app runs again.
        results.baseline = "cpu-kernels · CPU"  # its watcher redraws the table here and now
        drawn = (r"gemm 5124x9124x1760 NN fwd bf16 +220.7 +TFLOP/s ±\d\.\d% \d+ it +[\d.,]+×\?? +"
                 r"0\.\d+ +TFLOP/s ±\d+\.\d% \d+ it\n")  # fmt: skip
        assert re.search(drawn, screen_text(app) + "\n")

        await pilot.press("m")  # per watt: this recording's kernels read no energy of their own
        text = await wait_for_text(pilot, r"gemm 8448x48000x2816 TN fwd bf16 +no energy run")
        assert "per watt" in text
        assert "TFLOP/s/W" not in text  # no figure from telemetry sampled around milliseconds

        await pilot.press("m", "m")  # back to throughput; sort by the H200's column
        await pilot.press("right", "s")
        text = await wait_for_text(pilot, "h200x2-kernels ▼")
        assert "by h200x2-kernels, largest first in each unit" in text
        rows = [line for line in text.splitlines() if "FLOP/s" in line or "B/s" in line]
        assert rows[0].startswith(" gemm 2560x7000x2560 TN fwd bf16")  # 740 TFLOP/s, the top
        # TFLOP/s among TFLOP/s, then GB/s among GB/s: never 298 GB/s above 220 TFLOP/s.
        units = ["rate" if "FLOP/s" in row else "bytes" for row in rows]
        assert units == sorted(units, key=lambda unit: unit != "rate")

        await pilot.press("p")
        text = await wait_for_text(pilot, r"PCIe rx GB/s  3 more →\n")  # the rest wait, whole
        row = next(line for line in text.splitlines() if "64500000" in line)
        # Half a second: long enough for utilization (200 ms readings), too short for the
        # tensor and NVLink figures (GPM reads a mean over 1 s, most of it before the case).
        assert re.search(r"0\.506 +– +298\.2 +– +98 +– +519 +– +–$", row), row
        row = next(line for line in text.splitlines() if "100000 floats" in line)
        assert re.search(r"4\.650 +– +3\.67 +– +4 +6 +287 +0\.005", row)  # 4.6 s: every figure
        phases = app.screen.query_one(PhaseTable)
        assert app.focused is phases  # p puts the focus in the table, where → brings in the rest
        await pilot.press("right", "right")
        text = await wait_for_text(pilot, r"NVLink rx GB/s  per W\n")
        row = next(line for line in text.splitlines() if "64500000" in line)
        assert re.search(r"h200x2-kernels +allreduce 64500000 floats ×2 allreduce fp32 +98 +– +519"
                         r"( +–){5}$", row), row  # fmt: skip


async def test_detail_shows_every_gpu_its_processes_and_throttle_reasons_in_words() -> None:
    app = create_app([])
    now = time.time()
    async with app.run_test(size=(120, 60)) as pilot:
        for message in gpu_box_messages(now):
            app.fleet.apply("gpubox:7070", message)
        processes = [GpuProcess(4242, 70 * 2**30, "python3"), GpuProcess(77)]
        busy = GpuSample(0, "ok", {"util_gpu": 99.0, "throttle": 0x4 | 0x40}, processes=processes)
        host = HostSample({"cpu": 12.0})
        app.fleet.apply("gpubox:7070", Sample(31, now + 3.1, 4.1, host, [busy]))
        await wait_for_text(pilot, "gpubox")
        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen))
        text = await wait_for_text(pilot, "processes \\(2\\)")
        assert re.search(r"4242 python3 +70.0 GiB", text)
        assert re.search(r"77 \? +–", text)
        assert "software power cap — drawing its power limit" in text
        assert "hardware thermal slowdown — too hot" in text
        assert "GPU 1 · NVIDIA H200" in text and "lost" in text
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, DetailScreen))


async def test_filter_by_name_and_the_light_theme() -> None:
    app = create_app([])
    async with app.run_test(size=(120, 30)) as pilot:
        for name in ("gpu-01:7070", "gpu-02:7070", "cpu-01:7070"):
            app.fleet.add(name)
        await wait_for_text(pilot, "cpu-01:7070")
        await pilot.press("slash")
        await pilot.press(*"gpu")
        await wait_until(pilot, lambda: "filter 'gpu': 2 shown" in app.sub_title)
        text = screen_text(app)
        assert "gpu-01:7070" in text and "gpu-02:7070" in text and "cpu-01:7070" not in text
        await pilot.press("escape")  # clears it
        await wait_for_text(pilot, "cpu-01:7070")
        await wait_until(pilot, lambda: "filter" not in app.sub_title)

        assert app.theme == "textual-dark"
        await pilot.press("t")
        assert app.theme == "textual-light"


async def test_many_servers_lay_out_only_the_panels_near_the_view() -> None:
    app = create_app([])
    now = time.time()
    async with app.run_test(size=(120, 30)) as pilot:
        for n in range(64):
            for message in gpu_box_messages(now)[:3]:
                app.fleet.apply(f"gpu-{n:02d}:7070", message)
        strip = app.query_one(ServerStrip)
        laid_out = lambda: [i for i, c in enumerate(strip.columns) if c.body.display]  # noqa: E731
        # This page of three columns and the next.
        await wait_until(pilot, lambda: len(strip.columns) == 64 and laid_out() == [*range(6)])
        assert "64 servers · 64 live" in app.sub_title
        await pilot.press("end")
        await wait_until(pilot, lambda: 63 in laid_out() and 0 not in laid_out())
        await wait_for_text(pilot, "gpu-63:7070")


async def test_the_launcher_returns_the_run_to_start_and_escape_returns_nothing() -> None:
    app = create_replay_app([H200, CPU])
    answers: list = []
    async with app.run_test(size=(100, 30)) as pilot:
        await replayed_to_the_end(pilot)
        await app.push_screen(LauncherScreen(app.fleet), answers.append)
        await pilot.press("s")  # the first plan, on every live server (chosen already)
        await wait_until(pilot, lambda: len(answers) == 1)
        (start,) = answers
        assert start.launch.description == "Smoke test" and start.sources == list(app.fleet.servers)
        ((plan, across),) = start.launch.plans
        assert plan.shape_set == "tiny" and not across
        await app.push_screen(LauncherScreen(app.fleet), answers.append)
        await pilot.press("escape")
        await wait_until(pilot, lambda: len(answers) == 2)
        assert answers[1] is None and not isinstance(app.screen, LauncherScreen)


async def test_the_launcher_says_what_is_chosen_how_big_each_plan_is_and_x_closes_it() -> None:
    app = create_replay_app([H200, CPU])
    answers: list = []
    async with app.run_test(size=(100, 30)) as pilot:
        await replayed_to_the_end(pilot)
        await app.push_screen(LauncherScreen(app.fleet), answers.append)
        text = await wait_for_text(pilot, r"h200x2-kernels  ✓ chosen")
        assert "cpu-kernels  ✓ chosen" in text
        assert re.search(r"▐●▌ Smoke test", text) and re.search(r"▐ ▌ Quick kernels", text)
        assert re.search(r"h200x2-kernels: 19 cases, about \d+ s", text)
        await pilot.press("space")  # the first server is not chosen any more: in words
        text = await wait_for_text(pilot, r"h200x2-kernels  ✗ not chosen")
        assert "h200x2-kernels: 19 cases" not in text and "cpu-kernels: 19 cases" in text
        launcher = app.screen
        await pilot.press("space")  # chosen again: still the first, as listed, not as ticked
        scale_out = next(b for b in launcher.query(RadioButton) if b.name == "scale_out")
        scale_out.value = True  # the first server runs the baselines (1 and 2 GPUs) first
        text = await wait_for_text(pilot, r"h200x2-kernels: 3 training runs, about \d+")
        assert "cpu-kernels: 1 training run, about " in text
        plan_file = next(b for b in launcher.query(RadioButton) if b.name == "file")
        plan_file.value = True
        text = await wait_for_text(pilot, r"a TOML file with \[kernels\] and \[models\] tables")
        await pilot.press("x")
        await wait_until(pilot, lambda: answers == [None])


async def test_the_phases_of_a_sweep_say_how_many_processes_each_run_had() -> None:
    app = create_replay_app([FIXTURES / "h200-models.dlrec", FIXTURES / "cpu-models.dlrec"])
    async with app.run_test(size=(160, 40)) as pilot:
        app.replay.playing = False
        app.replay.seek(app.replay.length)
        await pilot.press("v", "p")
        text = await wait_for_text(pilot, r"alexnet bf16 batch 512 ×2 procs")
        assert "alexnet bf16 batch 512 ×1 proc " in text
        assert "alexnet bf16 batch 512 ×1 GPU " in text  # the H200's, the same configuration


async def test_a_case_shorter_than_a_batch_of_frames_shows_the_time_its_worker_took() -> None:
    """Live, a job frame is dated by the server's latest sample: a case that started and
    ended between two samples showed 'time s 0'. It shows what its worker timed, or '–' where
    its result does not say (an agent from before results did)."""
    app = create_app([])
    gemm = KernelResult("gemm", "torch", "cuda:0", "bf16", "fwd", "64x64x64 NN", tflops=0.5)
    async with app.run_test(size=(160, 30)) as pilot:
        for message in gpu_box_messages(time.time()):
            app.fleet.apply("gpubox:7070", message)
        app.fleet.apply("gpubox:7070", JobProgress("j", 0, 2, "gemm 64"))
        app.fleet.apply("gpubox:7070", JobResult("j", replace(gemm, case_s=0.0312)))
        app.fleet.apply("gpubox:7070", JobProgress("j", 1, 2, "gemm 128"))
        app.fleet.apply("gpubox:7070", JobResult("j", replace(gemm, shape="128x128x128 NN")))
        await pilot.press("v", "p")
        text = await wait_for_text(pilot, r"gemm 128x128x128 NN fwd bf16")
        assert re.search(r"gemm 64x64x64 NN fwd bf16 +0\.031 +0\.5000 ", text), text
        assert re.search(r"gemm 128x128x128 NN fwd bf16 +– +0\.5000 ", text), text


async def test_a_case_the_recording_ends_in_says_so_in_the_phases_as_on_the_main_view(
    tmp_path,
) -> None:
    """The main view said 'running when the recording ended'; the phases, only 'running'."""
    cut = tmp_path / "cut.dlrec"
    whole = CPU.read_bytes()
    cut.write_bytes(whole[: len(whole) // 2])  # stopped mid-run: the last case never ended
    app = create_replay_app([cut])
    async with app.run_test(size=(160, 40)) as pilot:
        app.replay.playing = False
        app.replay.seek(app.replay.length)
        await wait_for_text(pilot, r"job \w+ · running when the recording ended")
        await pilot.press("v", "p")
        text = await wait_for_text(pilot, r"8448x48000x2816 TN fwd +… +running when the recording")
        assert not re.search(r"running(?! when the recording ended)", text), text


async def test_the_compare_keys_leave_the_footer_on_the_other_tabs_and_change_nothing() -> None:
    """`s`, `b` and `m` on the Phases tab sorted, rebased and re-measured the Compare table
    unseen, and its settings line stayed above the phases."""
    app = create_replay_app([H200, CPU])
    async with app.run_test(size=(170, 40)) as pilot:
        results = await results_at_the_end(pilot)
        await wait_for_text(pilot, r"s Sort")
        await pilot.press("p")
        text = await wait_for_text(pilot, r"PCIe rx GB/s")
        assert "s Sort" not in text and "b Baseline" not in text and "m Metric" not in text
        assert "sorts by the cursor's column" not in text
        assert "c Compare" in text and "p Phases" not in text  # the way back, not the tab shown
        await pilot.press("s", "b", "m")
        await pilot.pause()
        compare = (results.sort, results.baseline, results.metric)
        assert compare == ((None, False), REFERENCE, "rate")

        await pilot.press("c", "b")  # on Compare again, each does what it says
        text = await wait_for_text(pilot, r"ratio to h200x2-kernels")
        assert "s Sort" in text and "sorts by the cursor's column" in text
        assert "p Phases" in text and "c Compare" not in text
