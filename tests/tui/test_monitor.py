"""The monitor as issue #15 asks for it, driven by Pilot: eight GPUs, the host and a job on an
80x24 screen; charts that fill 200x60; servers that line up row for row, one of them offline;
the window, the overlay, the `:` line, the palette, and a replay that says it is one."""

from __future__ import annotations

import re
import time

import pytest
from textual.widgets import Input

from dltui.protocol.messages import ConnectionState
from dltui.tui import DltuiApp, create_app
from dltui.tui.replay_app import create_replay_app
from dltui.tui.screens.overlay import OverlayScreen
from tests.conftest import FIXTURES
from tests.tui.pilot import screen_text, wait_for_text, wait_until
from tests.tui.synthetic import server_messages

H200, CPU = FIXTURES / "h200x2-kernels.dlrec", FIXTURES / "cpu-kernels.dlrec"
BORDERS = "│╭╮╰╯─┤├ "
CHART_LABELS = r"(util|Σ?mem|Σ?power|temp|sm clk|tensor|Σ?pci [tr]x|Σ?nvl [tr]x|cpu|net [↓↑])"


def fleet_of(app: DltuiApp, gpus: list[int], seconds: float = 180.0) -> None:
    """Servers gpu-00, gpu-01 … with these many GPUs each, `seconds` of samples to now."""
    start = time.time() - seconds
    for n, count in enumerate(gpus):
        for message in server_messages(f"gpu-{n:02d}", count, start, seconds):
            app.fleet.apply(f"gpu-{n:02d}:7070", message)


def blank_share(text: str) -> float:
    """The share of screen rows with nothing on them but borders and spaces."""
    rows = text.splitlines()
    return sum(not row.strip(BORDERS) for row in rows) / len(rows)


async def test_eight_gpus_the_host_and_a_job_fit_80x24() -> None:
    app = create_app([])
    async with app.run_test(size=(80, 24)) as pilot:
        fleet_of(app, [8])
        await wait_for_text(pilot, r"\n +7 ")
        await wait_for_text(pilot, r"job job1 · running █+·+ 9/60")
        text = await wait_for_text(pilot, r"\n util +100%┤[\s\S]*Quit")  # the footer drawn too
        rows = text.splitlines()
        assert len(rows) == 24
        assert re.search(r"job job1 · running █+·+ 9/60", text)
        assert re.search(r"\n cpu \S+ +\d+%  mem 100.0/512.0 GiB", text)
        header = next(row for row in rows if row.startswith(" GPU util"))
        for column in ("mem GiB", "power", "temp", "tensor", "SM MHz", "PCIe GB/s", "NVLink GB/s"):
            assert column in header, column
        gpus = [row for row in rows if re.match(r" +\d ", row)]
        assert [int(row.split()[0]) for row in gpus] == list(range(8))
        assert all(re.search(r"\d+/700 W +\d+ °C", row) for row in gpus)
        assert re.search(r"\n util +100%┤", text)  # and a chart in the rows left over
        assert blank_share(text) < 0.15


@pytest.mark.parametrize("gpus", [[2], [8], [2, 2], [8, 0]], ids=["2", "8", "2+2", "8+cpu"])
async def test_charts_fill_200x60(gpus: list[int]) -> None:
    app = create_app([])
    async with app.run_test(size=(200, 60)) as pilot:
        fleet_of(app, gpus)
        text = await wait_for_text(pilot, r"−60s[ ─]+−30s[ ─]+now")
        await pilot.pause(0.3)
        text = screen_text(app)
        assert blank_share(text) < 0.15, text
        assert len(re.findall(r"┤", text)) >= 20  # charts, each with its axis


async def test_a_recording_pair_fills_200x60() -> None:
    app = create_replay_app([H200, CPU])
    async with app.run_test(size=(200, 60)) as pilot:
        app.replay.playing = False
        app.replay.seek(app.replay.length * 0.8)
        text = await wait_for_text(pilot, r"GPU 1 · NVIDIA H200")
        await pilot.pause(0.5)
        text = screen_text(app)
        assert blank_share(text) < 0.15, text


def label_rows(text: str, left: slice, right: slice) -> tuple[list[str], list[str]]:
    """Each side's chart labels and GPU rows, by screen row (blank where it has none)."""
    found: tuple[list[str], list[str]] = ([], [])
    for row in text.splitlines()[1:-1]:  # between the title and the footer
        for side, part in zip(found, (row[left], row[right]), strict=True):
            match = re.match(r"[ │]*(" + CHART_LABELS + r"|\d+ )", part)
            side.append(match.group(1).strip() if match else "")
    return found


@pytest.mark.parametrize("size", [(120, 40), (200, 60)])
async def test_two_servers_line_up_row_for_row_when_one_is_offline(size: tuple[int, int]) -> None:
    app = create_app([])
    width = size[0] // 2
    async with app.run_test(size=size) as pilot:
        fleet_of(app, [4, 4])
        last = app.fleet.servers["gpu-01:7070"].last_sample_time or time.time()
        app.fleet.apply("gpu-01:7070", ConnectionState("offline", last + 1, "connection reset"))
        text = await wait_for_text(pilot, r"as of \d\d:\d\d:\d\d · connection reset")
        await pilot.pause(0.3)
        text = screen_text(app)
        left, right = label_rows(text, slice(0, width), slice(width, 2 * width))
        assert sum(bool(label) for label in left) >= 8
        assert left == right, text
        # The offline one keeps its last values (memory stays what it was, not a full bar).
        offline = app.fleet.servers["gpu-01:7070"]
        assert offline.link == "offline"
        assert any("mem 100.0/512.0 GiB" in row[width:] for row in text.splitlines())


async def test_off_screen_servers_are_counted_either_side() -> None:
    app = create_app([])
    async with app.run_test(size=(120, 30)) as pilot:
        fleet_of(app, [1] * 5, seconds=10)
        text = await wait_for_text(pilot, r"2 more ▶")
        assert "servers 1–3 of 5" in text and "◀" not in text
        await pilot.press("right", "right")
        text = await wait_for_text(pilot, r"◀ 2 more")
        assert "servers 3–5 of 5" in text and "more ▶" not in text


async def test_w_cycles_the_window_and_the_time_axis_follows() -> None:
    app = create_app([])
    async with app.run_test(size=(120, 40)) as pilot:
        fleet_of(app, [2])
        await wait_for_text(pilot, r"−60s[ ─]+−30s")
        await pilot.press("w")
        await wait_for_text(pilot, r"−10m[ ─]+−5m")
        await pilot.press("w")
        await wait_for_text(pilot, r"−1h[ ─]+−30m")
        await pilot.press("w")
        await wait_for_text(pilot, r"−60s[ ─]+−30s")


async def test_overlay_draws_a_line_per_server_and_the_difference_to_a_baseline() -> None:
    app = create_app([])
    async with app.run_test(size=(160, 50)) as pilot:
        fleet_of(app, [2, 8])
        await wait_for_text(pilot, "gpu-01")
        await pilot.press("o")
        await wait_until(pilot, lambda: isinstance(app.screen, OverlayScreen))
        text = await wait_for_text(pilot, r"■ \d+ W  [+−]\d+ W [\d.]+×")  # B − A, B / A
        assert "differences against ◆ gpu-00" in text
        assert re.search(r"power +5600 W┤", text)  # the larger server's limits set the scale
        await pilot.press("b")
        await wait_for_text(pilot, r"differences against ◆ gpu-01")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, OverlayScreen))


async def test_panels_that_do_not_fit_scroll_together_under_a_line_saying_how_many_more():
    app = create_app([])
    async with app.run_test(size=(200, 60)) as pilot:
        fleet_of(app, [8, 2], seconds=10)
        await wait_for_text(pilot, "gpu-01")
        await pilot.press("c")  # panels, forced: eight GPUs do not fit in one screen
        # Both, as the columns redraw in turns: the line may show before the panels above it.
        text = await wait_for_text(pilot, r"(?s)(?=.*5 more GPUs ↓)(?=.*GPU 2 · NVIDIA H200)")
        assert "GPU 3 · NVIDIA H200" not in text
        await pilot.press("pagedown")  # a page of panel rows, in every column at once
        await wait_for_text(pilot, r"▲ 3 above · 2 more GPUs ↓")
        # The two-GPU server scrolled with it (columns redraw in turns): rows stay in line.
        text = await wait_for_text(pilot, r"(?s)(?=.*▲ 2 above  ↑↓)(?=.*GPU 3 · NVIDIA H200)")
        assert "GPU 0 · NVIDIA H200" not in text
        layout = app.view.layout
        assert layout is not None and layout.more_line()
        for column in app.strip.columns:  # one scroll for all: no column scrolls by itself
            assert column.body.max_scroll_y == 0
        await pilot.press("down", "down")
        await wait_for_text(pilot, r"▲ 5 above")
        assert app.view.gpu_row == layout.gpu_rows() - layout.gpu_rows_shown  # no further


async def test_escape_clears_a_kept_filter() -> None:
    app = create_app([])
    async with app.run_test(size=(120, 40)) as pilot:
        fleet_of(app, [2, 2], seconds=10)
        await wait_for_text(pilot, "gpu-01")
        await pilot.press("slash", *"gpu-01", "enter")  # kept: the box goes, the filter stays
        await wait_until(pilot, lambda: "filter 'gpu-01': 1 shown" in app.sub_title)
        assert not app.query_one("#filter").display
        await pilot.press("escape")
        await wait_until(pilot, lambda: "filter" not in app.sub_title)
        assert all(column.display for column in app.strip.columns)
        await pilot.press("slash")  # the box opens empty again
        await wait_until(pilot, lambda: app.query_one("#filter", Input).value == "")


async def test_the_command_line_runs_actions_and_suggests_on_a_typo() -> None:
    app = create_app([])
    told: list[str] = []
    notify = app.notify
    app.notify = lambda message, **more: (told.append(message), notify(message, **more))[1]  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)) as pilot:
        fleet_of(app, [2, 2], seconds=10)
        await wait_for_text(pilot, "gpu-01")
        await pilot.press("colon", *"window 10m", "enter")
        await wait_for_text(pilot, r"−10m[ ─]+−5m")
        await pilot.press("colon", *"filter gpu-01", "enter")
        await wait_until(pilot, lambda: "filter 'gpu-01': 1 shown" in app.sub_title)
        await pilot.press("colon", *"windo", "enter")
        await wait_until(pilot, lambda: any("did you mean window?" in m for m in told))
        await pilot.press("colon", *"compact", "enter")
        await wait_until(pilot, lambda: app.view.layout is not None and app.view.layout.compact)


README_ACTIONS = ("Record", "Detail", "Window", "Topology", "Help", "Filter", "Overlay",
                  "Results")  # fmt: skip
"""The actions the README names: the palette finds each by its name."""


async def test_the_palette_offers_every_action_once() -> None:
    app = create_replay_app([H200])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for_text(pilot, "h200x2-kernels")
        titles = [command.title for command in app.get_system_commands(app.screen)]
        for title in ("Results", "Detail", "Overlay", "Window", "Compact/panels", "Command",
                      "Filter", "Theme", "Help", "Quit", "Export results", "Phases",
                      "What-if", "Topology", "Events", "Play", "Faster", "Slower", "Jump",
                      "Next"):  # fmt: skip
            assert titles.count(title) == 1, (title, titles)
        assert len(titles) == len(set(titles)), titles
    live = create_app([])
    async with live.run_test(size=(120, 40)):
        titles = [command.title for command in live.get_system_commands(live.screen)]
        for title in (*README_ACTIONS, "Quit", "Theme"):
            assert titles.count(title) == 1, (title, titles)


async def test_a_replay_says_it_is_one() -> None:
    app = create_replay_app([H200, CPU])
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_until(pilot, lambda: "2 servers · replay 1×" in app.sub_title)
        text = await wait_for_text(pilot, r"▷ recorded \d\d:\d\d:\d\d")
        assert "● live" not in text and "rtt" not in text
        await pilot.press("space")
        await wait_until(pilot, lambda: "replay paused" in app.sub_title)
        app.replay.seek(app.replay.length)
        await wait_until(pilot, lambda: "replay ended" in app.sub_title)
        await wait_for_text(pilot, r"■ recording ended")
        await wait_for_text(pilot, r"job \w+ · done · 17 results")


async def test_a_job_the_recording_ends_in_says_so(tmp_path) -> None:
    cut = tmp_path / "cut.dlrec"
    whole = CPU.read_bytes()
    cut.write_bytes(whole[: len(whole) // 2])  # stopped mid-run: no end of the job in it
    app = create_replay_app([cut])
    async with app.run_test(size=(120, 40)) as pilot:
        app.replay.seek(app.replay.length)
        text = await wait_for_text(pilot, r"job \w+ · running when the recording ended")
        assert "■ recording ended" in text and "left" not in text


async def test_the_focused_server_is_lit_and_the_focus_follows_the_view() -> None:
    app = create_app([])
    async with app.run_test(size=(80, 30)) as pilot:
        fleet_of(app, [2] * 4, seconds=10)
        strip = app.strip
        await wait_until(pilot, lambda: len(strip.columns) == 4 and app.focused is strip.columns[0])

        def lit() -> bool:  # the focus ring: its header; `:focus` styles land a refresh later
            headers = [column.header.styles.background for column in strip.columns]
            return headers[0] != headers[1]

        await wait_until(pilot, lit)
        await pilot.press("right", "right")  # two columns on: the first two are out of view
        await wait_until(pilot, lambda: app.focused is strip.columns[2])
        await pilot.press("tab")
        await wait_until(pilot, lambda: app.focused is strip.columns[3])
        await pilot.press("d")  # d opens the focused one
        await wait_until(pilot, lambda: app.screen.sub_title == "gpu-03 in detail")
