"""Training on this machine's CPU, both frameworks: every model trains a few real steps in its
own rank processes, DDP over Gloo scales to two processes, and a folder of real images (UCI's
handwritten digits, tests/fixtures/digits-017.npz) trains to a target accuracy.

Tiny images and batches keep the suite fast; the GPU figures come from the device
(docs/results/models-h200.md).
"""

from __future__ import annotations

import io
import math
import os

import pytest

from dltui.bench.training import run_models
from dltui.plans import sizing
from dltui.plans.names import CNN_MODELS
from dltui.plans.scaling import scaling
from dltui.protocol.bench_plans import ModelPlan
from dltui.protocol.bench_results import ModelResult
from tests.conftest import ROOT, SLOW, require

pytestmark = SLOW

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
TINY = {"device": "cpu", "image_size": 67, "batch": 2, "warmup": 1, "steps": 3, "classes": 10}
FRAMEWORKS = ["torch", "tensorflow"]


def train(plan: ModelPlan) -> tuple[list[ModelResult], list[tuple]]:
    results: list[ModelResult] = []
    progress: list[tuple] = []
    run_models(plan, results.append, lambda *args: progress.append(args), lambda: False)
    return results, progress


def assert_trained(result: ModelResult, framework: str, model: str, processes: int) -> None:
    """What a run's result says on this CPU: its model and setting, each timed step, and
    images/s as the whole timed run (batch × processes × steps ÷ the steps' total time)."""
    assert result.error is None, result.error
    assert (result.model, result.framework, result.device, result.gpus, result.batch) == (
        model, framework, "cpu", processes, 2,
    )  # fmt: skip
    assert len(result.step_times) == result.steps == 3
    assert all(0 < t < 60 for t in result.step_times)
    assert result.images_per_s == pytest.approx(
        2 * processes * 3 / sum(result.step_times), rel=1e-3
    )
    assert math.isfinite(result.spread) and result.spread >= 0
    assert result.precision == "fp32" and not result.compiled  # a CPU's defaults
    assert result.reference is None  # the published figures are GPUs'


SWEPT = "googlenet"
"""Trained by the sweep below, whose one-process run is checked as every other model's is: one
rank process fewer of each framework (TensorFlow's import alone is ~6 s of CPU)."""


@pytest.mark.parametrize("model", [model for model in CNN_MODELS if model != SWEPT])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_model_trains_and_reports_its_throughput(framework, model):
    require(framework)
    (result,), _ = train(ModelPlan(framework=framework, models=[model], **TINY))
    assert_trained(result, framework, model, 1)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_sweep_over_two_processes_scales_with_gloo(framework, tmp_path, monkeypatch):
    require(framework)
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the ranks' temporary folder, unless the run's
    plan = ModelPlan(framework=framework, models=[SWEPT], gpus=[1, 2],
                     **TINY | {"image_size": 32})  # fmt: skip
    results, progress = train(plan)
    one, two = results
    assert_trained(one, framework, SWEPT, 1)
    assert_trained(two, framework, SWEPT, 2)
    # One case per run, each announced before its result, and the run's end.
    assert sorted({done for done, *_ in progress}) == [0, 1, 2]
    assert progress[-1][:2] == (2, 2)
    assert any(len(p) == 4 and p[3] is not None and 0 < p[3] <= 1 for p in progress)
    efficiency = scaling([("vm", one), ("vm", two)])
    expected = two.images_per_s / (2 * one.images_per_s)
    assert efficiency[1].vs_one_gpu == pytest.approx(expected)
    assert efficiency[0].vs_one_gpu is None
    # The ranks end without the interpreter's exit, so what they wrote to a temporary folder
    # (TensorFlow's autograph: each converted function) goes with their run's folder. torch's
    # compile cache is there to outlive the run.
    assert [path.name for path in tmp_path.iterdir() if "torchinductor" not in path.name] == []


def test_a_model_that_cannot_run_fails_alone():
    require("torch")
    plan = ModelPlan(models=["googlenet", "resnet50"], gpus=[64], **TINY)
    results, _ = train(plan)
    assert [r.model for r in results] == ["googlenet", "resnet50"]
    for result in results:
        assert result.images_per_s is None
        assert "64 CPU processes" in result.error or "cores" in result.error


DIGITS = (0, 1, 7)
"""Three of the ten classes: an epoch a third as long, and learnt in a few."""


@pytest.fixture(scope="session")
def digits(tmp_path_factory):
    """The 539 handwritten 0s, 1s and 7s of the UCI digits set (8×8, 17 grey levels; Alpaydin
    and Kaynak, CC BY 4.0, as scikit-learn bundles it), written out as a folder of PNGs per
    class."""
    numpy = pytest.importorskip("numpy")
    image = pytest.importorskip("PIL.Image")
    root = tmp_path_factory.mktemp("digits")
    with numpy.load(ROOT / "tests/fixtures/digits-017.npz") as bundle:
        images, labels, indices = bundle["images"], bundle["labels"], bundle["index"]
    assert sorted(set(labels.tolist())) == list(DIGITS)
    for pixels, label, index in zip(images, labels, indices, strict=True):
        folder = root / f"digit-{label}"
        folder.mkdir(exist_ok=True)
        image.fromarray((pixels.astype("uint16") * 255 // 16).astype("uint8")).save(
            folder / f"{index:04d}.png"
        )
    return root


@pytest.mark.parametrize(("framework", "target"), [("torch", 0.9), ("tensorflow", 0.67)])
def test_time_to_accuracy_on_a_folder_of_real_images(digits, framework, target):
    """GoogLeNet learns the digits in a few epochs. tf_cnn_benchmarks' GoogLeNet has no batch
    norm and starts slower: its target, twice chance, keeps the test to about five epochs."""
    require(framework)
    plan = ModelPlan(
        framework=framework, models=["googlenet"], device="cpu", image_size=32, batch=32,
        data_dir=str(digits), target_accuracy=target, max_epochs=12,
    )  # fmt: skip
    (result,), _ = train(plan)
    assert result.error is None, result.error
    assert result.data == "folder" and result.target_accuracy == target
    assert result.accuracy >= target
    assert 0 < result.time_to_accuracy_s < 600
    assert result.epochs <= 12 and result.images_per_s > 0


def test_a_folder_that_is_not_an_image_set_is_a_clear_error(tmp_path):
    require("torch")
    (tmp_path / "only-one-class").mkdir()
    plan = ModelPlan(models=["googlenet"], device="cpu", image_size=32, batch=2,
                     data_dir=str(tmp_path), target_accuracy=0.5)  # fmt: skip
    (result,), _ = train(plan)
    assert "needs a sub-folder per class, at least two" in result.error


def test_tensorflow_sizes_its_batch_from_the_gpu_memory_nvml_reports():
    """None without a GPU, the first GPU's memory with one (it once called NVML's list of GPUs
    as a function, and TensorFlow training on a GPU failed before its first step)."""
    require("tensorflow")
    from dltui.bench.training.tf_train import _gpu_memory

    memory = _gpu_memory()
    assert memory is None or memory > 0


def test_a_one_process_torch_run_makes_the_steps_its_estimate_counts(monkeypatch):
    """The launcher said 'about 4 min' for the CNN models on a 2-core CPU and they took 8: a
    one-process torch run steps about as many times again for its step profile (the what-if's
    input) as the plan's 12. The trainer's steps, counted by a hook on the model's forward."""
    require("torch")
    from dltui.bench.models import torch_zoo
    from dltui.bench.ranks import Reporter
    from dltui.bench.training import TrainJob
    from dltui.bench.training.torch_train import train as train_in_process

    forwards = []
    build = torch_zoo.build

    def counted(name: str, classes: int):
        model = build(name, classes)
        model.register_forward_hook(lambda *_: forwards.append(1))
        return model

    monkeypatch.setattr(torch_zoo, "build", counted)
    job = TrainJob("torch", "resnet20", "cpu", 1, 1, 2, None, None, None, 1, 2, 16, 10, 0.1,
                   None, None, 0.2, 1, 60.0)  # fmt: skip
    report = io.BytesIO()
    train_in_process(job, Reporter(report, 0), lambda: False, 0, 1, "", 0)
    assert b"profile" in report.getvalue()  # its result, with the profile those steps made
    assert len(forwards) == job.warmup + job.steps + sizing.PROFILE_EXTRA_STEPS
