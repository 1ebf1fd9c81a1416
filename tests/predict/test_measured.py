"""`dltui predict` fed by real measurements: a one-process training run's step profile and an
all-reduce between two processes, from a real agent, predict a two-process run measured beside
them; the one-process prediction is the run itself."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from tests.conftest import ROOT, dltui_command, require

pytestmark = pytest.mark.xdist_group("predict-measured")  # one worker: the fixture runs once

TRAIN = ["--model", "resnet20", "--image-size", "16", "--classes", "4", "--batch", "8",
         "--device", "cpu", "--warmup", "1", "--steps", "3"]  # fmt: skip


def bench(agent: str, out, *args: str) -> dict:
    command = dltui_command("bench", *args, "--agent", agent, "--json", str(out))
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=240)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    require("torch")
    from tests.conftest import start_agent

    folder = tmp_path_factory.mktemp("measured")
    agent = start_agent()
    try:
        one = bench(agent.address, folder / "one.json", "models", *TRAIN, "--gpus", "1")
        curve = bench(agent.address, folder / "curve.json", "kernels", "--kind", "allreduce",
                      "--set", "tiny", "--device", "cpu", "--gpus", "2",
                      "--max-seconds", "0.2")  # fmt: skip
        two = bench(agent.address, folder / "two.json", "models", *TRAIN, "--gpus", "2")
    finally:
        agent.kill()
    return folder, one, curve, two


def test_a_one_process_run_carries_its_step_profile(measured):
    _, one, _, _ = measured
    (result,) = one["models"]
    profile = result["profile"]
    assert profile["method"] == "hooks" and profile["collective"] == "gloo"
    assert profile["overlap"] is True
    sizes, ready = profile["gradient_bytes"], profile["ready"]
    assert sum(sizes) == 4 * profile["params"] > 0  # fp32 gradients, one per parameter
    assert ready == sorted(ready) and ready[0] > 0 and ready[-1] <= 1
    assert 0 < profile["forward"] < profile["backward"] <= 1
    assert ready[-1] == pytest.approx(profile["backward"])
    assert profile["overhead"] >= 0


def test_all_reduce_results_carry_the_compute_lost_beside_them(measured):
    _, _, curve, _ = measured
    rows = [r for r in curve["results"] if r["kind"] == "allreduce"]
    assert len(rows) >= 4 and all(r["params"]["ranks"] == 2 for r in rows)
    assert all(isinstance(r["compute_lost_s"], float) and r["compute_lost_s"] >= 0 for r in rows)


def test_predict_from_measurements_matches_the_run_on_one_process(measured):
    folder, one, _, two = measured
    files = [str(folder / name) for name in ("one.json", "curve.json", "two.json")]
    done = subprocess.run(
        dltui_command("predict", *files, "--layouts", "1x1,1x2,2x1", "--json", "-"),
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    table = json.loads(done.stdout)
    assert table["predicted"] is True and table["overlap"] == "measured"
    (step,) = [s for s in table["sources"] if s.startswith("step: measured: torch resnet20")]
    assert re.search(r", 3 steps within [-+]\d+%/[-+]\d+%", step), step  # how they vary
    inside = [s for s in table["sources"] if "inside a server: measured: gloo all-reduce" in s]
    assert len(inside) == 1 and "2 processes" in inside[0]
    assert "compute lost beside it: 5 sizes" in inside[0]
    rows = {row["layout"]: row for row in table["rows"]}
    (alone,) = one["models"]
    assert rows["1x1"]["predicted_images_per_s"] == pytest.approx(alone["images_per_s"])
    assert rows["1x1"]["measured_images_per_s"] == pytest.approx(alone["images_per_s"])
    (pair,) = two["models"]
    assert rows["1x2"]["measured_images_per_s"] == pytest.approx(pair["images_per_s"])
    assert rows["1x2"]["predicted_images_per_s"] > 0
    assert rows["1x2"]["predicted_communication_s"] > 0
    # Nothing measured between servers: said, not guessed.
    assert rows["2x1"]["predicted_images_per_s"] is None
    assert "between servers" in rows["2x1"]["missing"]


H200_PROFILES = ROOT / "docs" / "results" / "profiles-h200.json"


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda run: run.update(images_per_s=float("nan")), "images/s nan"),
        (lambda run: run.update(images_per_s=-100.0), "images/s -100.0"),
        (lambda run: run.update(images_per_s=1e-320), "its step time"),
        (lambda run: run.update(batch=0), "batch 0"),
        (lambda run: run["profile"].update(overhead=-0.5), "overhead -0.5"),
        (lambda run: run["profile"].update(gradient_bytes=[0] * 161), "its gradient sizes"),
        (lambda run: run["profile"].update(ready=[1.5] * 161), "its gradients' ready times"),
        (lambda run: run.update(step_times=[0.1, float("inf")]), "its step times"),
    ],
)
def test_a_damaged_profile_is_not_predicted_from_and_the_answer_says_why(tmp_path, change, words):
    from dltui.plans.assertions import bench_results
    from dltui.predict.answer import NothingToPredict, answer

    document = json.loads(H200_PROFILES.read_text())
    (run,) = [run for run in document["models"] if run["model"] == "resnet50"]
    assert len(run["profile"]["gradient_bytes"]) == 161
    answer(*bench_results(H200_PROFILES), "resnet50")  # whole, it predicts
    change(run)
    damaged = tmp_path / "damaged.json"
    damaged.write_text(json.dumps({"results": [], "models": [run]}))
    with pytest.raises(NothingToPredict, match=re.escape(f"resnet50 result: {words} cannot")):
        answer(*bench_results(damaged), "resnet50")
