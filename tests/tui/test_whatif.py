"""The what-if screen (`w` in the results), driven by Pilot from a real recording: AlexNet
trained on one and two CPU processes (the one-process run with its step profile) and a Gloo
all-reduce between two processes, made by `dltui record --plan tests/fixtures/cpu-whatif.toml`.
"""

from __future__ import annotations

import dataclasses
import re

from dltui.client.session import ClientSession
from dltui.fleet.state import Fleet
from dltui.predict.answer import answer
from dltui.predict.described import server
from dltui.predict.model import Layout
from dltui.protocol.messages import JobResult
from dltui.recording.reader import RecordingReader
from dltui.recording.results import recorded_results
from dltui.recording.whatif import NETWORK_GBIT, images
from dltui.tui.app import DltuiApp
from dltui.tui.replay_app import create_replay_app
from dltui.tui.screens.results import ResultsScreen
from dltui.tui.screens.whatif import WhatIfScreen
from dltui.tui.view import MonitorView
from screenshots.scenes import StillTime
from tests.conftest import FIXTURES
from tests.tui.pilot import screen_text, wait_for_text, wait_until

WHATIF = FIXTURES / "cpu-whatif.dlrec"
LAYOUTS = ("1×1", "1×2", "1×8", "2×4", "4×2", "8×1", "16×8", "64×8")


def line_of(text: str, layout: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f" {layout} "))


def predicted_2x4(gbit: float) -> str:
    """The 2×4 figure as the predictor gives it, over a described TCP link of `gbit`."""
    kernels, models = recorded_results(WHATIF)
    link = server({"network_gbit": gbit, "transport": "tcp"})
    table = answer(kernels, models, "alexnet", link, None, [Layout(2, 4)])
    return images(table.rows[0].prediction.images_per_s)


async def open_whatif(pilot) -> str:
    await pilot.press("v")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, ResultsScreen))
    await pilot.press("w")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, WhatIfScreen))
    return await wait_for_text(pilot, r"PREDICTED alexnet")


async def test_whatif_rows_are_predicted_with_the_measured_beside_and_the_network_steps() -> None:
    _, models = recorded_results(WHATIF)
    one = next(m for _, m in models if m.gpus == 1 and m.profile is not None)
    app = create_replay_app([WHATIF])
    async with app.run_test(size=(120, 36)) as pilot:
        app.replay.playing = False
        app.replay.seek(app.replay.length)
        text = await open_whatif(pilot)
        # Every layout a row, in order of GPUs, the measured two-process run among them.
        starts = [text.index(f"\n {layout} ") for layout in LAYOUTS]
        assert starts == sorted(starts)
        # Every figure's heading says predicted, but the measured one's (two lines each).
        assert re.search(r"layout +GPUs +predicted +predicted +predicted +measured +predicted\n"
                         r" +images/s +efficiency +vs 1 server +comm wait\n", text)  # fmt: skip
        assert f"batch {one.batch} a GPU" in text
        assert re.search(r"described, 100 Gbit/s \(none measured\)", text)
        # The measured one-process figure beside its prediction.
        assert images(one.images_per_s or 0) in line_of(text, "1×1")
        assert "step: measured: torch alexnet" in text
        assert "inside a server: measured: gloo all-reduce, 2 processes" in text
        assert "between servers: described: 100 Gbit/s tcp at 70%" in text
        at_100 = line_of(text, "2×4")
        assert f" {predicted_2x4(100)} " in at_100

        await pilot.press("minus")  # 100 → 25 Gbit/s: the 2×4 row waits longer
        text = await wait_for_text(pilot, r"described, 25 Gbit/s")
        at_25 = line_of(text, "2×4")
        assert f" {predicted_2x4(25)} " in at_25 and at_25 != at_100
        assert line_of(text, "1×8") == line_of(screen_text(app), "1×8")  # one server: no network

        await pilot.press("plus", "plus")  # 25 → 100 → 200
        text = await wait_for_text(pilot, r"described, 200 Gbit/s")
        assert f" {predicted_2x4(200)} " in line_of(text, "2×4")
        await pilot.press("n")  # back to what was measured: nothing, so the default
        text = await wait_for_text(pilot, r"described, 100 Gbit/s \(none measured\)")
        assert line_of(text, "2×4") == at_100


async def test_whatif_chooses_among_profiled_models_from_a_live_fleet() -> None:
    """A fleet fed frame by frame as a session would, with a second profiled model; opened by
    the `:whatif` command."""
    fleet = Fleet()
    records = list(RecordingReader(WHATIF))
    for record in records:
        fleet.apply(record.source, record.message)
    results = [r.message.model for r in records if isinstance(r.message, JobResult)]
    profiled = next(m for m in results if m is not None and m.profile is not None)
    other = dataclasses.replace(profiled, model="vgg16")
    fleet.apply(records[-1].source, JobResult("later", model=other))
    app = DltuiApp(fleet, ClientSession([]), MonitorView(StillTime()))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("colon", *"whatif", "enter")  # the `:` command, from the main screen
        text = await wait_for_text(pilot, r"PREDICTED alexnet")
        assert "alexnet, batch 4 a GPU (1 of 2: m)" in text
        await pilot.press("m")
        text = await wait_for_text(pilot, r"PREDICTED vgg16, batch 4 a GPU \(2 of 2: m\)")
        assert "step: measured: torch vgg16" in text
        await pilot.press("m")
        await wait_for_text(pilot, r"PREDICTED alexnet")


async def test_whatif_says_what_to_run_when_no_result_has_a_profile() -> None:
    """Live, an empty results view and what-if say what to run (b here among them)."""
    app = DltuiApp(Fleet(), ClientSession([]), MonitorView(StillTime()))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("v")
        await wait_for_text(pilot, r"No results yet\. Press b on the main screen")
        await pilot.press("w")
        text = " ".join((await wait_for_text(pilot, r"Nothing to predict from yet")).split())
        assert "dltui bench models --model resnet50 --gpus 1" in text and "b here" in text
        assert "PREDICTED" not in text
        await pilot.press("plus")  # nothing to step: no error, the message stays
        assert "Nothing to predict from yet" in screen_text(app)
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, ResultsScreen))


async def test_a_replay_not_yet_at_its_results_says_how_to_reach_them() -> None:
    """At a replay's start its results are still ahead, and b runs nothing in a replay: the
    empty views say how to get there, and the way they give gets there."""
    app = create_replay_app([WHATIF])
    async with app.run_test(size=(100, 30)) as pilot:
        app.replay.playing = False
        await pilot.press("v")
        text = " ".join((await wait_for_text(pilot, r"No results at this point")).split())
        assert "g, then 100%, jumps to its end" in text and "Press b" not in text
        await pilot.press("w")
        text = " ".join((await wait_for_text(pilot, r"Nothing to predict from at this")).split())
        assert "g, then 100%, jumps to its end" in text and "b here" not in text
        await pilot.press("escape", "escape", "g", *"100%", "enter", "v", "w")
        await wait_for_text(pilot, r"PREDICTED alexnet")


async def test_whatif_over_the_network_measured_between_two_hosts() -> None:
    """With a recorded all-reduce across two agents (one process each), the network between
    servers is the measured one until + or - describes another, and n brings it back."""
    files = [WHATIF, FIXTURES / "cpu-allreduce-2hosts.dlrec"]
    kernels, models = [], []
    for path in files:
        found = recorded_results(path)
        kernels += found[0]
        models += found[1]
    measured = answer(kernels, models, "alexnet", None, None, [Layout(2, 4)])
    assert measured.fabric.inter is not None
    gbit = measured.fabric.inter.line_gbit
    app = create_replay_app(files)
    async with app.run_test(size=(120, 36)) as pilot:
        app.replay.playing = False
        app.replay.seek(app.replay.length)
        text = await open_whatif(pilot)
        assert f"between servers: measured, {gbit:.3g} Gbit/s" in text
        assert "between servers: measured: gloo all-reduce, 2 servers" in text
        at_measured = line_of(text, "2×4")
        assert f" {images(measured.rows[0].prediction.images_per_s)} " in at_measured
        await pilot.press("plus")  # the next common rate above the measured one
        above = next(rate for rate in NETWORK_GBIT if rate > gbit)
        text = await wait_for_text(pilot, rf"described, {above:g} Gbit/s\s")
        assert "(none measured)" not in text
        await pilot.press("n")
        text = await wait_for_text(pilot, r"between servers: measured, ")
        assert line_of(text, "2×4") == at_measured
