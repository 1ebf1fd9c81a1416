from __future__ import annotations

from dataclasses import replace

import pytest

from dltui.plans.check import PlanError, check_plan
from dltui.protocol.bench_plans import KernelPlan, ModelPlan

GOOD = KernelPlan(framework="torch", shape_set="tiny", kinds=["gemm", "conv"], precisions=["bf16"])


def test_a_good_plan_passes_unchanged():
    assert check_plan(GOOD) is GOOD
    assert check_plan(KernelPlan()) == KernelPlan()  # the defaults are a valid plan


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"framework": "caffe"}, ["unknown framework 'caffe'", "torch, tensorflow"]),
        ({"shape_set": "huge"}, ["unknown shape set"]),
        ({"kinds": ["gemm", "rm -rf /"]}, ["unknown kernel 'rm -rf /'"]),
        ({"kinds": []}, ["no kernel kinds"]),
        ({"precisions": ["fp8"]}, ["unknown precision 'fp8'"]),
        ({"kinds": ["gemm", "gemm"]}, ["must not repeat"]),
        ({"device": "tpu"}, ["unknown device"]),
        ({"gpus": -1}, ["gpus must be"]),
        ({"iterations": 0}, ["iterations must be 1-100000, got 0"]),
        ({"warmup": 10**9}, ["warmup must be"]),
        ({"max_seconds": float("nan")}, ["max_seconds"]),
        ({"timeout_s": 0.0}, ["timeout_s"]),
    ],
)
def test_bad_plans_are_refused_with_every_reason(change, words):
    with pytest.raises(PlanError) as raised:
        check_plan(replace(GOOD, **change))
    for word in words:
        assert word in str(raised.value)


def test_all_problems_are_reported_at_once():
    with pytest.raises(PlanError) as raised:
        check_plan(replace(GOOD, framework="caffe", precisions=["fp8"], gpus=-3))
    assert str(raised.value).count(";") == 2


def test_plan_files(tmp_path):
    from dltui.plans.files import load_plans

    good = tmp_path / "good.toml"
    good.write_text(
        '[models]\nmodels = ["vgg16"]\ngpus = [1, 2]\n'
        '[kernels]\nframework = "tensorflow"\nset = "tiny"\nprecisions = ["bf16"]\n'
    )
    assert load_plans(good) == [  # in the file's order
        ModelPlan(models=["vgg16"], gpus=[1, 2]),
        KernelPlan(framework="tensorflow", shape_set="tiny", precisions=["bf16"]),
    ]
    cases = {
        "[kernels\n": "not valid TOML",
        "": "no [kernels] or [models] table",
        "[training]\n": "unknown tables training",
        '[kernels]\ncluster = {master_addr = "x"}\n': "unknown keys cluster",
        '[kernels]\niterations = "many"\n': "expected int",
        '[kernels]\nkinds = ["gemm", "fft"]\n': "unknown kernel 'fft'",
        '[models]\nmodels = ["bert"]\n': "unknown model 'bert'",
        '[models]\nset = "quick"\n': "unknown keys set",
        # One of two would win unseen (the last written, here the full set's hours).
        '[kernels]\nset = "tiny"\nshape_set = "full"\n': "[kernels]: set and shape_set are one",
        # Two tables with a warmup: the problem says which.
        '[kernels]\nset = "tiny"\n[models]\nwarmup = -1\n': "[models]: warmup must be 0-",
    }
    for text, words in cases.items():
        path = tmp_path / "plan.toml"
        path.write_text(text)
        with pytest.raises(PlanError) as raised:
            load_plans(path)
        assert words in str(raised.value)
    with pytest.raises(PlanError, match="cannot read"):
        load_plans(tmp_path / "missing.toml")


def test_a_good_model_plan_passes_and_the_defaults_are_valid():
    plan = ModelPlan(models=["resnet50", "alexnet"], gpus=[1, 2, 4, 0], precision="fp16")
    assert check_plan(plan) is plan
    assert check_plan(ModelPlan()) == ModelPlan()


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"models": ["resnet50", "bert; rm -rf /"]}, ["unknown model 'bert; rm -rf /'"]),
        ({"models": []}, ["no models"]),
        ({"gpus": []}, ["no GPU counts"]),
        ({"gpus": [1, 1]}, ["must not repeat"]),
        ({"gpus": [-2]}, ["a GPU count must be"]),
        ({"precision": "mixed"}, ["unknown precision 'mixed'"]),
        ({"batch": 0}, ["batch must be"]),
        ({"steps": 0}, ["steps must be"]),
        ({"image_size": 8}, ["image_size must be"]),
        # Before any agent is asked: the worker found it, after a connection and a job.
        (
            {"models": ["resnet20", "alexnet"], "image_size": 32},
            ["alexnet needs images of at least 67 pixels, got 32"],
        ),
        ({"learning_rate": float("inf")}, ["learning_rate must be"]),
        ({"data_dir": "/data/digits"}, ["needs both data_dir and target_accuracy"]),
        ({"data_dir": "digits", "target_accuracy": 0.9}, ["absolute path"]),
        ({"data_dir": "/d", "target_accuracy": 1.5}, ["target_accuracy must be"]),
    ],
)
def test_bad_model_plans_are_refused(change, words):
    with pytest.raises(PlanError) as raised:
        check_plan(replace(ModelPlan(), **change))
    for word in words:
        assert word in str(raised.value)
