"""The results table at the widths a terminal over SSH has: no figure is cut at its right edge
('0.4' of '0.41×?' read as a figure of its own). The count of iterations gives way first, then
the spread, then a server's whole column, which → brings in and the heading at that edge
announces."""

from __future__ import annotations

import re

from rich.text import Text

from dltui.tui.replay_app import create_replay_app
from dltui.tui.widgets.whole_column_table import Column, Window, edge_headings, fit
from tests.conftest import FIXTURES
from tests.tui.pilot import replayed_to_the_end, screen_text, wait_for_text

H200, CPU = FIXTURES / "h200x2-kernels.dlrec", FIXTURES / "cpu-kernels.dlrec"
WHOLE = re.compile(r"(TFLOP/s|GB/s|\d%|\d it|\d×\??)$")
"""How a table row ends when its last cell is whole: a unit, a spread, a count or a ratio."""


def cut_rows(text: str) -> list[str]:
    rows = [line for line in text.splitlines() if re.match(r" (gemm|allreduce) ", line)]
    assert rows
    return [row for row in rows if not WHOLE.search(row.rstrip(" ▁▂▃▄▅▆▇█"))]


async def test_at_80_and_100_columns_no_figure_is_cut_and_the_other_server_is_a_key_away() -> None:
    app = create_replay_app([H200, CPU])
    async with app.run_test(size=(80, 24)) as pilot:
        await replayed_to_the_end(pilot)
        await pilot.press("v")
        text = await wait_for_text(pilot, r"gemm 512x16x512 NN fwd bf16 +0\.4276 TFLOP/s")
        assert cut_rows(text) == []
        # One server fits beside the names with its spreads, not its counts; the other waits.
        assert re.search(r"gemm 512x16x512 NN fwd bf16 +0\.4276 TFLOP/s ±6\.7% 0\.41×\?\n", text)
        assert re.search(r"benchmark +h200x2-kernels  1 more →\n", text)

        await pilot.press("right", "right")  # the names, the H200's column, then the CPU's
        text = await wait_for_text(pilot, r"benchmark +← 1 more  cpu-kernels · CPU\n")
        assert cut_rows(text) == []
        assert re.search(r"gemm 5124x9124x1760 NN fwd bf16 +0\.4808 TFLOP/s", text)
        await pilot.press("s")  # sorts by the column the cursor is on, brought in or not
        await wait_for_text(pilot, r"by cpu-kernels · CPU,\s+largest first")
        await pilot.press("left")
        await wait_for_text(pilot, r"benchmark +h200x2-kernels  1 more →\n")

        await pilot.resize_terminal(100, 30)  # room for its counts too, still not the other
        text = await wait_for_text(pilot, r"0\.4276 TFLOP/s ±6\.7% 400 it 0\.41×\?")
        assert cut_rows(text) == [] and "1 more →" in text

        await pilot.resize_terminal(200, 40)  # both, all they say
        text = await wait_for_text(pilot, r"h200x2-kernels +cpu-kernels · CPU ▼\n")
        assert cut_rows(text) == [] and "more" not in screen_text(app)
        assert re.search(r"±6\.7% 400 it 0\.41×\? +0\.2723 TFLOP/s ±6\.2% 400 it 0\.26×\?", text)


def test_detail_gives_way_before_a_column_and_the_edge_headings_count_those_off_each_side():
    def column(key: str, *widths: int) -> Column:
        return Column(key, key, [[Text("x" * width)] for width in widths])

    # Each column in forms of 30, 20 and 10 cells, padded by one cell a side.
    columns = [column(key, 30, 20, 10) for key in "abc"]
    assert fit(columns, 100, 0, 1) == Window(0, 0, 3)  # 96: all three, all they say
    assert fit(columns, 70, 0, 1) == Window(1, 0, 3)  # the richest form held two: 66 holds three
    assert fit(columns, 30, 0, 1) == Window(2, 0, 2)  # 12 + 13 ("b  1 more →"): two, bare
    assert fit(columns, 5, 2, 1) == Window(2, 2, 1)  # not one fits: one, bare (the names give way)
    assert edge_headings(columns, 1, 1) == ["← 1 more  b  1 more →"]
    # Three of 5 cells fit 15 where two do not: the second's heading would count the third.
    narrow = [column(key, 3) for key in "abc"]
    assert fit(narrow, 15, 0, 1) == Window(0, 0, 3)
    assert edge_headings(columns, 0, 3) == ["a", "b", "c"]
