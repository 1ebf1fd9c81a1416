"""The transformer workloads across two hosts (agents in network namespaces, each with an
address of its own): the tiny GPT trained with DDP and with FSDP over Gloo, one rank a host,
and the collectives FSDP and mixture-of-experts use on four ranks, two a host."""

from __future__ import annotations

import json
import math
import subprocess

import pytest

from dltui.plans import formulas
from dltui.plans.names import COLLECTIVES
from tests.conftest import ROOT, SLOW, dltui_command, require
from tests.netns import unavailable

REASON = unavailable()
pytestmark = [pytest.mark.skipif(REASON is not None, reason=REASON or ""), SLOW]


def bench(cluster, secret_file, out, *args: str) -> dict:
    command = dltui_command(
        "bench", *args, "--device", "cpu", "--secret-file", str(secret_file),
        "--agent", cluster.address(1), "--agent", cluster.address(2), "--json", str(out),
    )  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr + cluster.log(1) + cluster.log(2)
    report = json.loads(out.read_text())
    assert [job["state"] for job in report["jobs"]] == ["done", "done"]
    return report


@pytest.mark.parametrize("parallel", ["ddp", "fsdp"])
def test_the_tiny_gpt_trains_across_two_hosts(cluster, secret_file, tmp_path, parallel):
    require("torch")
    report = bench(cluster, secret_file, tmp_path / "gpt.json", "models", "--scale-out",
                   "--no-baseline", "--model", "gpt-tiny", "--gpus", "1", "--warmup", "80",
                   "--steps", "10", "--parallel", parallel)  # fmt: skip
    (across,) = report["models"]
    assert across["error"] is None
    assert (across["gpus"], across["servers"], across["parallel"]) == (2, 2, parallel)
    assert across["tokens_per_s"] == pytest.approx(
        2 * 16 * 64 * 10 / sum(across["step_times"]), rel=1e-3
    )
    losses = across["losses"]
    chance = math.log(64)
    assert abs(losses[0] - chance) < 0.3 and sum(losses[-10:]) / 10 < 0.5 * chance


def test_the_collectives_on_four_ranks_across_two_hosts(cluster, secret_file, tmp_path):
    require("torch")
    report = bench(cluster, secret_file, tmp_path / "collectives.json", "kernels", "--set",
                   "tiny", "--kind", ",".join(COLLECTIVES), "--gpus", "2", "--iterations", "5",
                   "--max-seconds", "0.2")  # fmt: skip
    results = report["results"]
    assert sorted({r["kind"] for r in results}) == sorted(COLLECTIVES)
    for r in results:  # each rank checked the values it got before any was timed
        assert r["error"] is None, r["error"]
        assert r["params"]["ranks"] == 4 and r["direction"] == r["kind"]
        assert r["gbps"] == pytest.approx(r["params"]["bytes"] / r["median_s"] / 1e9)
        expected = formulas.collective_busbw(r["kind"], r["gbps"], 4)
        assert r["busbw_gbps"] == pytest.approx(expected)
