"""The compute-lost probe's arithmetic, on scripted compute times: what it reads when the
machine's load drifts while it measures (the suite's other processes, on a shared box)."""

from __future__ import annotations

import pytest

from dltui.bench.kernels.beside import PAIRS, Probe, excess

LOST_S = 0.05
"""What one call of the scripted collective costs the compute beside it."""


class DriftingProbe(Probe):
    """A probe whose compute takes longer each time it runs (a load that grows), and
    LOST_S longer while the collective runs: no clock, no torch."""

    def __init__(self, drift_s: float) -> None:
        self.product_s, self.drift_s, self.runs, self.collective_running = 0.001, drift_s, 0, False
        self.collectives = 0

    def compute(self, products: int) -> float:
        took = products * self.product_s + self.runs * self.drift_s
        self.runs += 1
        return took + (LOST_S if self.collective_running else 0.0)

    def start(self) -> DriftingProbe:
        self.collective_running, self.collectives = True, self.collectives + 1
        return self

    def wait(self) -> None:
        self.collective_running = False


@pytest.mark.parametrize("drift_s", [0.0, 0.02, -0.01])
def test_a_load_that_drifts_while_the_probe_runs_is_not_read_as_lost(drift_s):
    probe = DriftingProbe(drift_s)
    lost = probe.lost(probe.start, collective_s=0.1, agree=lambda values: values, budget_s=0.0)
    assert lost == pytest.approx(LOST_S)
    assert probe.collectives == PAIRS  # scripted compute takes no time: every pair is taken
    assert probe.runs == 2 * PAIRS + 1  # each beside between two alone


def test_each_beside_is_held_against_the_alone_on_both_sides():
    assert excess([1.0, 1.2, 1.6], [1.5, 1.4]) == pytest.approx([0.4, 0.0])
    with pytest.raises(ValueError):
        excess([1.0, 1.2], [1.5, 1.4])
