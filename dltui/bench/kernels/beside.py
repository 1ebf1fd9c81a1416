"""What a collective takes from compute that runs beside it, on CPU processes.

Data-parallel training all-reduces a bucket while backward computes the next ones, in the same
process, on the same CPUs (a cgroup's quota on a test host, a container's elsewhere). What
that costs backward is not the collective's own CPU time: the kernel's network stack, thread
wake-ups and a quota spent early all land on the compute. So it is measured as training meets
it: a fixed piece of compute (matrix products on the rank's own threads, as a convolution's
are), timed alone, then with the collective started just before it, then alone again; what the
middle one took over the two alone is what one call of the collective costs the compute beside
it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from dltui.plans.formulas import median

PAIRS = 5
"""Computes beside the collective per size at most (each between two alone): the difference
of noisy times needs a median."""
PROBE_S = 10.0
"""Pairs are taken for this long at least (or the size's own budget, if longer): a timing
budget of a second left one pair at the sizes that carry gradients, and one pair is as noisy
as the compute (0.0 ms read at 1 MB across two hosts at 300 Mbit/s)."""
COMPUTE_SPAN = 3.0
"""The compute lasts this many times the collective, at least: the whole call falls inside."""
MIN_COMPUTE_S = 0.02
MAX_PAIR_S = 30.0
"""A size whose pair would take longer is not measured: the rank would stay silent past the
worker's watchdog (a collective on a slow link, a collective starved by the compute)."""
SIDE = 192
"""The matrices' side: a product of a few milliseconds on one CPU."""
RATE_SPAN_S = 0.1
"""The products are counted over this long to size the compute: a product is shorter than a
CPU quota's period (10 ms on a test host), so one timed alone runs at the CPU's full speed,
and the compute sized from it ran 2.5 times longer than meant under a 0.4-CPU quota."""


class Probe:
    """One rank's fixed piece of compute, and its pace, measured once for all sizes."""

    def __init__(self, torch: Any) -> None:
        self._mm = torch.mm
        self._a, self._b = torch.rand(SIDE, SIDE), torch.rand(SIDE, SIDE)
        self.compute(2)  # warm the library's kernels
        self.product_s = seconds_per_product(self.compute)

    def compute(self, products: int) -> float:
        began = time.perf_counter()
        for _ in range(products):
            self._mm(self._a, self._b)
        return time.perf_counter() - began

    def lost(
        self,
        start: Callable[[], Any],
        collective_s: float,
        agree: Callable[[list[float]], list[float]],
        budget_s: float,
    ) -> float | None:
        """Compute seconds lost per call of the collective running beside it, on the rank
        that lost most (a step is as slow as its slowest rank), at least 0; None for a
        collective too long to measure so. `start()` launches one call of the collective and
        returns what `.wait()`s for it; `collective_s` is its time alone; `agree` takes each
        value's maximum over the ranks (a collective itself: it also lines the ranks up
        before each timing). Computes beside it, each followed by one alone, are taken until
        `budget_s` or PROBE_S is spent, whichever is longer (one at least, PAIRS at most), the
        ranks agreeing on when, or their collectives would no longer match."""
        wanted = max(COMPUTE_SPAN * collective_s, MIN_COMPUTE_S)
        if 2 * wanted > MAX_PAIR_S:
            return None
        # The same length on every rank: each then waits for the others about as long.
        products = int(agree([float(math.ceil(wanted / max(self.product_s, 1e-6)))])[0])
        agree([0.0])
        alone = [self.compute(products)]
        beside: list[float] = []
        began = time.perf_counter()
        while len(beside) < PAIRS:
            if beside and agree([time.perf_counter() - began])[0] >= max(budget_s, PROBE_S):
                break
            agree([0.0])
            handle = start()
            beside.append(self.compute(products))
            handle.wait()
            agree([0.0])
            alone.append(self.compute(products))
        lost = excess(alone, beside)
        return max(agree([median(lost)])[0], 0.0)


def excess(alone: list[float], beside: list[float]) -> list[float]:
    """Each compute beside the collective less the mean of the compute alone just before it and
    just after it (`alone` holds one more than `beside`): a load that grows or eases while they
    run (other processes on the machine) moves both sides alike, where a pair's one side read
    it as lost."""
    pairs = zip(beside, alone[:-1], alone[1:], strict=True)
    return [took - (before + after) / 2 for took, before, after in pairs]


def seconds_per_product(compute: Callable[[int], float]) -> float:
    """A product's seconds as a long run of them goes: products timed in growing runs until
    one run spans RATE_SPAN_S, over which a quota's throttling averages out."""
    products = 1
    while (took := compute(products)) < RATE_SPAN_S:
        products *= 2
    return took / products
