"""Which span of the energy counter's updates a per-watt figure reads (bench/energy.py), on
update series written out by hand: a counter moving every 100 ms as NVML's does."""

from __future__ import annotations

import itertools

import pytest

from dltui.bench.energy import HOLD_AT_LIMIT_S, power_window
from dltui.plans import formulas


def counter(watts: list[float], step_s: float = 0.1) -> list[tuple[float, float]]:
    """Updates of a counter that drew watts[k] over its k-th interval."""
    joules = itertools.accumulate((w * step_s for w in watts), initial=0.0)
    return [(k * step_s, e) for k, e in enumerate(joules)]


def test_a_power_that_holds_below_the_limit_is_read_whole_at_once():
    updates = counter([650.0] * 6)
    assert power_window(updates, limit_w=700.0) == pytest.approx((0.0, 0.6))


def test_an_update_seen_late_is_no_swing():
    """The meter saw one move 20 ms late, as the trace on an H100 shows once: over one interval
    that reads 650 W as 542 and the next as 813, past the band."""
    updates = counter([650.0] * 8)
    t, e = updates[4]
    updates[4] = (t + 0.02, e)  # the counter moved at t; the meter saw it 20 ms later
    assert power_window(updates, limit_w=None) == pytest.approx((0.0, 0.8))


def test_at_the_limit_a_power_that_holds_waits_until_it_has_held_long_enough():
    short = counter([695.0] * 8)
    assert power_window(short, limit_w=700.0) is None
    assert power_window(short, limit_w=700.0, final=True) == pytest.approx((0.0, 0.8))
    held = counter([695.0] * round(HOLD_AT_LIMIT_S / 0.1 + 1))
    assert power_window(held, limit_w=700.0) == pytest.approx((0.0, held[-1][0]))


def test_swings_are_read_between_rises_after_a_first_high():
    """Low, high, then swings of 1 s: the climb out of the first low is no rise (a ramp from
    idle looks the same); the span runs from the second climb to the fourth."""
    swing = [500.0] * 5 + [800.0] * 5
    updates = counter([500.0] * 3 + [800.0] * 5 + swing * 3)
    begin, end = power_window(updates, limit_w=700.0)
    assert end - begin == pytest.approx(2.0, abs=0.01)  # two whole swings
    assert 1.3 <= begin < 1.6  # the readings lag the climb by up to READING_S
    joules = formulas.at(updates, end) - formulas.at(updates, begin)
    assert joules / (end - begin) == pytest.approx(650.0, rel=0.005)  # their mean, not a phase


def test_a_first_overshoot_from_idle_is_left_out_where_the_power_then_holds():
    """An H100 from idle drew ~780 W for a moment against its 700 W limit; where the power then
    holds, the span starts once the readings hold. What of the overshoot is within the band
    stays in: at most the band times its share of the span."""
    updates = counter([780.0] * 4 + [698.0] * 16)
    whole = updates[-1][1] / updates[-1][0]
    assert whole == pytest.approx(714.4)  # 2.3% over what it holds at
    begin, end = power_window(updates, limit_w=700.0)
    assert begin > 0.0 and end == pytest.approx(2.0) and end - begin >= HOLD_AT_LIMIT_S
    joules = formulas.at(updates, end) - formulas.at(updates, begin)
    assert joules / (end - begin) == pytest.approx(698.0, rel=0.015)
