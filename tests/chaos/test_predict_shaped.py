"""`dltui predict` held against real data-parallel training across network namespaces whose
links are shaped with tc, each host's CPU held to the same quota: torch DDP over Gloo and
TensorFlow's MultiWorkerMirroredStrategy, a gradient-heavy CNN, fed only with the one-host
profile and the all-reduce curve of the same links. The full table (three rates, 2 and 4
hosts, two workloads, three repeats) is benchmarks/predict_shaped.py's; this is its smallest
slice, within the issue's 15%: 2 hosts at 100 Mbit/s, where communication dominates the step.
(At 300 Mbit/s it takes a minute less, but the step leans on the one-host profile, and with the
rest of the suite beside it on two cores one run of two read TensorFlow GoogLeNet 16% off.)"""

from __future__ import annotations

import pytest

from benchmarks.predict_shaped import error, run
from tests.conftest import SLOW, require
from tests.netns import unavailable

REASON = unavailable()
SAID = ("config", "predicted_runs", "measured_runs", "one_host_runs", "step_s", "predicted_from")
"""What a failure shows: each run's rate, each step's seconds (a stall, or all steps), and what
each prediction was made of (which input was off)."""
pytestmark = [pytest.mark.skipif(REASON is not None, reason=REASON or ""), SLOW]


def test_predictions_hold_on_a_shaped_link_for_both_frameworks():
    require("torch", "tensorflow")
    rows = run(["100mbit"], [2], repeats=1, frameworks=["torch", "tensorflow"], quota=0.4,
               steps=4, say=lambda _: None, ratios=("high",))  # fmt: skip
    assert [row["framework"] for row in rows] == ["torch", "tensorflow"]
    for row in rows:
        assert row["measured_images_per_s"] > 0 and row["predicted_images_per_s"] > 0
        assert abs(error(row)) <= 0.15, repr({key: row[key] for key in SAID})  # whole, not cut
