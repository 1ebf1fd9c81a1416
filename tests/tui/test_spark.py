from __future__ import annotations

import math

from dltui.tui.widgets.spark import cells, sparkline


def test_cells_take_the_peak_of_each_half_second():
    points = [(10.0 + i / 10, float(i)) for i in range(20)]  # 2 s at 10 Hz
    assert cells(points, width=4) == [4.0, 9.0, 14.0, 19.0]
    assert cells(points, width=2) == [14.0, 19.0]
    assert cells([], width=4) == []


def test_cells_stay_put_as_points_arrive():
    points = [(10.0 + i / 10, float(i % 5)) for i in range(20)]
    before = cells(points, width=10)
    after = cells([*points, (12.0, 0.0)], width=10)
    assert after[:-1] == before  # the old cells are unchanged by a new one


def test_slow_series_repeat_and_gaps_stay_gaps():
    points = [(0.0, 1.0), (1.0, 2.0), (1.5, math.nan), (2.0, 3.0)]  # 1 Hz, then a gap
    got = cells(points, width=5)
    assert got[0] == 1.0 and got[1] == 1.0 and got[2] == 2.0
    assert math.isnan(got[3]) and got[4] == 3.0
    assert sparkline(got, top=3.0, width=6) == " ▃▃▆ █"
