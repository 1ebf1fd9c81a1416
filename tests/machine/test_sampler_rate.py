"""The sampler on this machine's real NVML and /proc, timed by its real clock."""

from __future__ import annotations

import itertools
import time

from dltui.protocol.messages import Sample
from dltui.telemetry.sampler import Sampler
from tests.conftest import wait_for


def test_samples_arrive_at_the_asked_rate_on_this_machine() -> None:
    arrived: list[Sample] = []
    sampler = Sampler(20, arrived.append)
    inventory = sampler.inventory
    if not inventory.gpus:  # this machine: no NVIDIA driver
        assert inventory.nvml_error
    sampler.start()
    try:
        wait_for(lambda: arrived and arrived[-1].mono - arrived[0].mono >= 1.0, 10.0,
                 "a second of samples")  # fmt: skip
        samples = list(arrived)
    finally:
        began = time.monotonic()
        sampler.stop()
        stopped_in = time.monotonic() - began
    first = samples[0]
    in_first_second = [s for s in samples if s.mono - first.mono < 1.0]
    assert len(in_first_second) >= 15
    assert [s.seq for s in samples] == list(range(first.seq, first.seq + len(samples)))
    assert all(b.mono > a.mono for a, b in itertools.pairwise(samples))
    assert abs(samples[-1].wall - time.time()) < 5
    assert all(len(s.gpus) == len(inventory.gpus) for s in samples)
    assert "cpu" in first.host.values
    assert stopped_in < 1.0
