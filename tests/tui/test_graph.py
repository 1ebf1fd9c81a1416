"""Charts as text: cells over a window from a series with an hour's history, braille rows, the
axes, the physical scales and the layout that lines servers up."""

from __future__ import annotations

import math
import random

import pytest

from dltui.fleet.series import BUCKET_S, Series
from dltui.protocol.fields import GPU_FIELDS, HOST_FIELDS
from dltui.protocol.inventory import GpuInfo
from dltui.tui.graph import area_rows, axis_labels, line_rows, time_axis
from dltui.tui.layout import JOB_ROWS, plan
from dltui.tui.scales import full_scale, nice_top, nvlink_bytes, pcie_bytes, physical_top


def test_cells_take_the_peak_of_each_stretch_and_stay_put_as_points_arrive():
    series = Series(capacity=100)
    for i in range(20):  # 2 s at 10 Hz
        series.append(10.0 + i / 10, float(i))
    assert series.cells(11.9, 0.5, 4) == [4.0, 9.0, 14.0, 19.0]
    before = series.cells(11.9, 0.5, 4)
    series.append(12.0, 0.0)
    assert series.cells(12.0, 0.5, 5)[:-1] == before


def test_slow_series_repeat_gaps_stay_gaps_and_no_data_is_nan():
    series = Series(capacity=100)
    for t, value in [(0.0, 1.0), (1.0, 2.0), (1.5, math.nan), (2.0, 3.0)]:
        series.append(t, value)
    got = series.cells(2.0, 0.5, 7)
    assert math.isnan(got[0]) and math.isnan(got[1])  # before the first point
    assert got[2:4] == [1.0, 1.0] and got[4] == 2.0 and math.isnan(got[5]) and got[6] == 3.0


def test_an_hour_of_ten_hertz_is_kept_as_peaks_in_buckets():
    series = Series(capacity=600)  # a minute as it came
    for i in range(36_000):  # an hour at 10 Hz: a peak of 100 every 10 minutes
        series.append(1000.0 + i / 10, 100.0 if i % 6000 == 3000 else 1.0)
    hour = series.cells(1000.0 + 3599.9, 60.0, 60)
    assert len(hour) == 60 and not any(math.isnan(v) for v in hour)
    assert sorted(hour).count(100.0) == 6  # every peak survives the folding into buckets
    assert series._coarse is not None and len(series._coarse) * 4 == 3600 / BUCKET_S * 4


def _fresh(series: Series) -> Series:
    """The same points, with nothing remembered of earlier asks."""
    copy = Series(series.capacity)
    copy._t, copy._v, copy._head, copy._size = series._t, series._v, series._head, series._size
    return copy


@pytest.mark.parametrize("seconds", [0.3, 1.0, 19.0])
def test_cells_asked_again_as_time_moves_on_equal_cells_worked_out_afresh(seconds):
    rng = random.Random(7)
    series = Series(capacity=5000)
    t = 1000.0
    for step in range(2000):
        t += rng.choice([0.1, 0.1, 0.5, 2.0])
        series.append(t, math.nan if rng.random() < 0.02 else rng.random() * 100)
        if step % 9 == 0:  # now, a little after the newest point, or before it (a skewed clock)
            end = t + rng.uniform(-3.0, 1.0)
            got, want = series.cells(end, seconds, 40), _fresh(series).cells(end, seconds, 40)
            assert len(got) == 40
            assert all(
                a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(got, want, strict=True)
            )


def test_the_latest_value_before_a_gap():
    series = Series(capacity=8)
    series.append(1.0, 5.0)
    series.mark_gap(2.0)
    assert series.last() is None and series.latest() == (1.0, 5.0)


def test_braille_area_and_lines():
    assert area_rows([0.0, 100.0], 100.0, 2) == ["⢸", "⣸"]  # a zero still shows a dot
    assert area_rows([math.nan, math.nan], 100.0, 1) == [" "]
    rows = line_rows([[0.0, 100.0], [50.0, 50.0]], 100.0, 2)
    assert [char for char, _ in rows[0]] != [" "] and rows[0][0][1] in (0, 1)


def test_axes_say_the_scale_in_the_unit_and_the_time():
    assert axis_labels(700.0, "W", 5) == [
        "   700 W",
        "        ",
        "   350 W",
        "        ",
        "       0",
    ]
    assert axis_labels(141 * 2**30, "B", 2) == [" 141 GiB", "       0"]
    axis = time_axis(40, 600.0)
    assert axis.startswith("−10m ") and axis.endswith(" now") and " −5m " in axis
    assert len(axis) == 40


def test_nice_tops_are_round():
    assert [nice_top(x) for x in (0.3, 7, 23, 281e9)] == [0.5, 10, 25, 500e9]


def test_physical_scales():
    h200 = GpuInfo(0, "NVIDIA H200", "GPU-0", 141 * 2**30, 1, 16, 5, 16, nvlink_links=18)
    assert pcie_bytes(h200) == pytest.approx(63.0e9, rel=0.01)  # gen 5 ×16 (idle at gen 1)
    assert nvlink_bytes(h200) == 450e9
    assert nvlink_bytes(GpuInfo(0, "NVIDIA B200", "u", 1, nvlink_links=18)) == 900e9
    clock = Series(4)
    clock.append(1.0, 1980.0)
    gpu, host = GPU_FIELDS, HOST_FIELDS
    assert physical_top(gpu["clock_sm"], {"clock_sm_max": clock}, h200) == 1980.0
    assert physical_top(gpu["pcie_rx"], {}, h200) == pcie_bytes(h200)
    assert physical_top(gpu["mem_used"], {}, h200) == 141 * 2**30  # from the inventory
    assert physical_top(gpu["sm_active"], {}, None) == 100.0  # a percentage, charted or not
    assert physical_top(host["net_rx"], {}, None) is None
    # An idle clock is drawn against the maximum, not against itself.
    assert full_scale(gpu["clock_sm"], None, 345.0) == 2000.0
    assert full_scale(gpu["power"], 700.0, 80.0) == 700.0
    assert full_scale(host["net_rx"], None, 3e6) == 1e8  # a quiet link is not magnified
    assert full_scale(host["disk_write"], None, 4096.0) == 1e8  # nor a disk writing its logs
    assert full_scale(host["disk_read"], None, 2.3e9) == 2.5e9  # a dataset read is drawn whole


def test_layout_chooses_panels_where_charts_get_two_rows_and_lines_up_columns():
    small = plan(height=17, width=80, gpus=8, cores=32, metrics=10)
    assert small.compact and small.table == 9 and small.filler == 17 - JOB_ROWS - 1 - 9
    big = plan(height=53, width=200, gpus=2, cores=32, metrics=10)
    assert not big.compact and big.gpu_columns == 2 and min(big.chart_rows) >= 2
    assert big.gpu_area() + big.host + JOB_ROWS + big.filler == 53
    forced = plan(height=17, width=80, gpus=8, cores=32, metrics=10, mode="panels")
    assert not forced.compact and forced.chart_rows == (1,) * 10
