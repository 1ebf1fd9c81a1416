"""telemetry/rates.py: one way to turn a cumulative counter into a rate, for NVML and the host."""

from __future__ import annotations

import pytest

from dltui.telemetry.rates import CounterRates


def test_a_rate_is_the_difference_over_the_time_between_reads() -> None:
    rates = CounterRates()
    assert rates.update(10.0, {"tx": 1000.0, "rx": 0.0}) == {}  # one read: no rate yet
    assert rates.update(10.5, {"tx": 3000.0, "rx": 250.0}) == pytest.approx(
        {"tx": 4000.0, "rx": 500.0}
    )


def test_a_counter_that_went_backwards_has_no_rate_until_it_moves_on() -> None:
    rates = CounterRates()
    rates.update(0.0, {"tx": 5000.0, "rx": 0.0})
    assert rates.update(1.0, {"tx": 100.0, "rx": 10.0}) == {"rx": 10.0}  # tx reset
    assert rates.update(2.0, {"tx": 300.0, "rx": 20.0}) == {"tx": 200.0, "rx": 10.0}


def test_a_read_of_the_same_update_leaves_the_rates_as_they_were() -> None:
    rates = CounterRates()
    rates.update(0.0, {"tx": 0.0})
    assert rates.update(1.0, {"tx": 100.0}) == {"tx": 100.0}
    assert rates.update(1.0, {"tx": 100.0}) == {"tx": 100.0}  # NVML's same timestamp
    assert rates.update(3.0, {"tx": 300.0}) == {"tx": 100.0}  # from the read at 1.0


def test_a_counter_new_since_the_last_read_waits_for_its_second() -> None:
    rates = CounterRates()
    rates.update(0.0, {"net_rx": 0.0})
    assert rates.update(1.0, {"net_rx": 50.0, "disk_read": 7.0}) == {"net_rx": 50.0}
