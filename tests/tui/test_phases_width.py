"""The phases table at the widths a terminal over SSH has: no figure is cut at its right edge
('0.272' of '0.2723' read as a figure of its own); the server and the case stay at the left,
the figures that do not fit wait off the edge, whole, and the headings there count them."""

from __future__ import annotations

import re

from dltui.fleet.compare import server_names
from dltui.tui.replay_app import create_replay_app
from dltui.tui.widgets.phase_table import COLUMNS, FIXED, PhaseTable, phase_cells
from dltui.tui.widgets.whole_column_table import FIXED_AT_LEAST, given_way
from tests.conftest import FIXTURES
from tests.tui.pilot import replayed_to_the_end, screen_text, wait_for_text, wait_until

H200, CPU = FIXTURES / "h200x2-kernels.dlrec", FIXTURES / "cpu-kernels.dlrec"
FIGURES = COLUMNS[FIXED:]
LEFT, RIGHT = re.compile(r"← (\d+) more"), re.compile(r"(\d+) more →")


def cells(line: str) -> list[str]:
    """A table line's cells, its scrollbar's thumb left off: the table pads each cell with a
    space a side, and no cell holds two spaces in a row."""
    return re.split(r" {2,}", line.rstrip(" ▁▂▃▄▅▆▇█").strip())


def shown_figures(text: str, whole: dict[tuple[str, str], list[str]]) -> list[str]:
    """The headings of the figures on screen, after checking that the edge headings count those
    off screen and that every row shows exactly its figures under them, each one whole."""
    heading = next(line for line in text.splitlines() if line.startswith(" server "))
    names = cells(heading)
    left = sum(int(count) for count in LEFT.findall(heading))
    right = sum(int(count) for count in RIGHT.findall(heading))
    headings = [name for name in names[FIXED:] if not LEFT.match(name) and not RIGHT.match(name)]
    assert headings == list(FIGURES[left : left + len(headings)]), heading
    assert left + len(headings) + right == len(FIGURES), heading
    rows = [line for line in text.splitlines() if re.match(r" (h200x2|cpu)-kernels ", line)]
    assert rows
    for row in rows:
        server, case, *figures = cells(row)
        # A case cut with an ellipsis where one column would not fit beside it whole.
        keys = [key for key in whole if key[0] == server and key[1].startswith(case.rstrip("…"))]
        assert len(keys) == 1 and len(case) >= FIXED_AT_LEAST, row
        expected = whole[keys[0]][left : left + len(headings)]
        assert figures == [figure for figure in expected if figure], row
    return headings


async def test_every_phase_row_ends_with_whole_figures_and_the_arrows_bring_in_the_rest() -> None:
    app = create_replay_app([H200, CPU])
    async with app.run_test(size=(80, 24)) as pilot:
        await replayed_to_the_end(pilot)
        await pilot.press("v", "p")
        await wait_for_text(pilot, r"cpu-kernels +allreduce 64500000 floats")
        names = server_names(app.fleet)
        whole: dict[tuple[str, str], list[str]] = {}  # each row's figures, by server and case
        for phase in app.fleet.phases.phases:
            row = [cell.plain.strip() for cell in phase_cells(phase, names[phase.source], True)]
            whole[row[0], row[1]] = row[FIXED:]
        table = app.screen.query_one(PhaseTable)
        last_row = table.row_count - 1
        assert table.cursor_row == last_row  # the cursor follows the last case

        # At 80 columns one figure at a time: → brings in each of the others, ← goes back.
        seen = shown_figures(screen_text(app), whole)
        assert seen == ["time s"]
        await pilot.press("right")  # its figures under its heading, not under the count beside
        text = await wait_for_text(pilot, r"← 1 more  TFLOP/s  10 more →\n")
        heading = next(line for line in text.splitlines() if " TFLOP/s " in line)
        row = next(line for line in text.splitlines() if "gemm 512x16x512" in line)
        assert heading.index("TFLOP/s") < row.index("0.2723") < heading.index("10 more")
        seen += shown_figures(text, whole)
        while len(seen) < len(FIGURES):
            before = screen_text(app)
            await pilot.press("right")
            await wait_until(pilot, lambda before=before: screen_text(app) != before)
            seen += [name for name in shown_figures(screen_text(app), whole) if name not in seen]
        assert seen == list(FIGURES) and table.cursor_row == last_row
        await pilot.press(*["left"] * len(FIGURES))
        await wait_for_text(pilot, r"time s  11 more →\n")

        for width, first_shown in ((100, 3), (120, 5)):
            await pilot.resize_terminal(width, 24)
            text = await wait_for_text(pilot, rf"{re.escape(FIGURES[first_shown - 1])}  \d+ more →")
            assert len(shown_figures(text, whole)) == first_shown
            await pilot.press("right")
            text = await wait_for_text(pilot, r"← \d+ more")
            assert FIGURES[first_shown] in shown_figures(text, whole)
            await pilot.press(*["left"] * len(FIGURES))
            await wait_until(pilot, lambda: "←" not in screen_text(app))

        await pilot.resize_terminal(200, 24)  # every figure, nothing off either edge
        text = await wait_for_text(pilot, r"NVLink rx GB/s +per W\n")
        assert shown_figures(text, whole) == list(FIGURES) and "more" not in text


def test_the_first_columns_give_way_from_the_last_none_below_their_least() -> None:
    assert given_way([14, 42], 0) == [14, 42]
    assert given_way([14, 42], 10) == [14, 32]  # the case gives way before the server
    assert given_way([14, 42], 31) == [13, FIXED_AT_LEAST]
    assert given_way([14, 42], 99) == [FIXED_AT_LEAST, FIXED_AT_LEAST]
    assert given_way([5], 3) == [5]  # never cut below the least, nor widened to it


async def test_a_click_on_a_phases_heading_leaves_the_compare_tables_order() -> None:
    """The results screen sorted its Compare table by whichever table's heading was clicked."""
    app = create_replay_app([H200, CPU])
    async with app.run_test(size=(200, 40)) as pilot:
        await replayed_to_the_end(pilot)
        await pilot.press("v", "p")
        await wait_for_text(pilot, r"cpu-kernels +allreduce 64500000 floats")
        results = app.screen
        before = results.sort
        heading = next(line for line in screen_text(app).splitlines() if " time s " in line)
        table = results.query_one(PhaseTable)
        await pilot.click(PhaseTable, offset=(heading.index("time s") - table.region.x + 1, 0))
        await pilot.pause()
        assert results.sort == before
