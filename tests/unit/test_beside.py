"""The compute that the collective-beside-compute probe runs is sized as a quota lets it go."""

from __future__ import annotations

import pytest

from dltui.bench.kernels.beside import RATE_SPAN_S, seconds_per_product

PRODUCT_S = 0.001
PERIOD_S, QUOTA_S = 0.010, 0.004  # a 0.4-CPU quota on a 10 ms period, as a test host has


def throttled(products: int) -> float:
    """Seconds that `products` take from a period's start: full speed for the quota's share
    of each period, then held until the next."""
    work = products * PRODUCT_S
    periods, rest = divmod(work, QUOTA_S)
    return periods * PERIOD_S + rest


def test_a_product_is_timed_at_the_pace_a_quota_allows() -> None:
    assert throttled(1) == PRODUCT_S  # one product alone fits in a period: full speed
    assert seconds_per_product(throttled) == pytest.approx(PRODUCT_S * PERIOD_S / QUOTA_S, rel=0.1)


def test_without_a_quota_the_pace_is_the_product_s_own() -> None:
    runs: list[int] = []

    def free(products: int) -> float:
        runs.append(products)
        return products * PRODUCT_S

    assert seconds_per_product(free) == pytest.approx(PRODUCT_S)
    assert runs[-1] * PRODUCT_S >= RATE_SPAN_S > runs[-2] * PRODUCT_S  # no longer than needed
