"""The GPT benchmark on this machine's CPU: the tiny model learns the copy task through the
product's path (a rank process, as an agent's worker starts it), DDP and FSDP over Gloo train
the same model the same way, and a broken model — one whose attention sees nothing, or sees
the future — fails the same check a working one passes. The H200's figures come from the
device (docs/results/transformers-h200.md)."""

from __future__ import annotations

import math
import os

import pytest

from dltui.bench.models import torch_gpt
from dltui.bench.ranks import Reporter
from dltui.bench.training import TrainJob, run_models
from dltui.bench.training.torch_gpt_train import GptTrainer
from dltui.plans import gpt
from dltui.protocol.bench_plans import ModelPlan
from dltui.protocol.bench_results import ModelResult
from tests.conftest import IN_TENSORFLOW, SLOW, require

pytestmark = SLOW

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

TINY = gpt.SHAPES["gpt-tiny"]
SEQ = 64
STEPS = {"warmup": 80, "steps": 20}
"""A hundred steps: enough for the tiny model to find the copy (it does by step ~60)."""


def floor() -> float:
    """The loss a perfect model reaches: the first period's next tokens are random."""
    period = torch_gpt.period_for(SEQ)
    return math.log(TINY.vocab) * (period - 1) / SEQ


def learned(result: ModelResult) -> bool:
    """The loss started at chance, fell below half of it, and not below what a model that
    only looks back can reach (one that sees the future would)."""
    chance = math.log(TINY.vocab)
    start, end = result.losses[0], sum(result.losses[-10:]) / 10
    return abs(start - chance) < 0.3 and 0.7 * floor() < end < 0.5 * chance


def test_the_tiny_gpt_learns_the_copy_task_in_a_rank_process():
    require("torch")
    results: list[ModelResult] = []
    plan = ModelPlan(models=["gpt-tiny"], device="cpu", **STEPS)
    run_models(plan, results.append, lambda *_: None, lambda: False)
    (result,) = results
    assert result.error is None, result.error
    assert (result.model, result.device, result.gpus, result.seq_len, result.batch) == (
        "gpt-tiny", "cpu", 1, SEQ, gpt.CPU_BATCH["gpt-tiny"],
    )  # fmt: skip
    assert len(result.losses) == 100 and len(result.step_times) == result.steps == 20
    assert learned(result), result.losses
    tokens = gpt.CPU_BATCH["gpt-tiny"] * SEQ * 20
    assert result.tokens_per_s == pytest.approx(tokens / sum(result.step_times), rel=1e-3)
    assert result.images_per_s is None and result.image_size == 0
    assert result.mfu is None and result.peak_tflops is None  # a CPU has no dense peak here
    assert result.parallel == "ddp" and result.peak_memory is None


def job(parallel: str = "ddp") -> TrainJob:
    return TrainJob("torch", "gpt-tiny", "cpu", 1, 1, None, None, None, None, STEPS["warmup"],
                    STEPS["steps"], 0, 0, gpt.LEARNING_RATE["gpt-tiny"], None, None, 0.2, 1,
                    60.0, parallel=parallel)  # fmt: skip


def train_here() -> ModelResult:
    """One rank in this process, so a test can break the model it builds."""
    import torch

    torch.manual_seed(0)
    report = Reporter(open(os.devnull, "wb"), 0)  # noqa: SIM115 (open while the trainer runs)
    trainer = GptTrainer(torch, job(), torch.device("cpu"), 0, 1, report, lambda: False)
    result = trainer.throughput()
    assert result is not None
    return result


def test_a_working_model_passes_the_check_in_process():
    require("torch")
    assert learned(train_here())


@pytest.mark.parametrize("broken", ["attends to nothing", "sees the future"])
def test_a_broken_model_fails_the_check(monkeypatch, broken):
    require("torch")
    import torch

    attend = torch.nn.functional.scaled_dot_product_attention

    def attention(q, k, v, is_causal=False, **kwargs):
        if broken == "attends to nothing":
            return v  # each position keeps its own value: no token reaches another
        return attend(q, k, v, is_causal=False, **kwargs)  # the causal mask dropped

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", attention)
    result = train_here()
    assert not learned(result), result.losses[-10:]
    end = sum(result.losses[-10:]) / 10
    if broken == "sees the future":
        assert end < 0.7 * floor()  # it reads the next token instead of predicting it
    else:
        assert end > 0.5 * math.log(TINY.vocab)


@pytest.mark.parametrize("parallel", ["ddp", "fsdp"])
def test_two_gloo_processes_train_it_with_ddp_and_fsdp(parallel):
    require("torch")
    results: list[ModelResult] = []
    plan = ModelPlan(models=["gpt-tiny"], device="cpu", gpus=[2], parallel=parallel, **STEPS)
    run_models(plan, results.append, lambda *_: None, lambda: False)
    (result,) = results
    assert result.error is None, result.error
    assert (result.gpus, result.parallel) == (2, parallel)
    assert learned(result), result.losses
    tokens = 2 * gpt.CPU_BATCH["gpt-tiny"] * SEQ * 20
    assert result.tokens_per_s == pytest.approx(tokens / sum(result.step_times), rel=1e-3)


def test_the_keras_gpt_learns_the_copy_task_too():
    require("tensorflow")
    results: list[ModelResult] = []
    plan = ModelPlan(framework="tensorflow", models=["gpt-tiny"], device="cpu", **STEPS)
    run_models(plan, results.append, lambda *_: None, lambda: False)
    (result,) = results
    assert result.error is None, result.error
    assert (result.framework, result.device, result.seq_len, result.parallel) == (
        "tensorflow", "cpu", SEQ, "ddp",
    )  # fmt: skip
    assert learned(result), result.losses
    tokens = gpt.CPU_BATCH["gpt-tiny"] * SEQ * 20
    assert result.tokens_per_s == pytest.approx(tokens / sum(result.step_times), rel=1e-3)


@IN_TENSORFLOW
def test_the_keras_gpt_has_the_torch_models_parameters():
    require("tensorflow")
    from dltui.bench.models import keras_gpt

    model = keras_gpt.build(TINY, SEQ)
    assert model.count_params() == gpt.parameters(TINY, SEQ)


@pytest.mark.parametrize("name", list(gpt.SHAPES))
def test_the_torch_gpts_have_the_parameters_plans_count(name):
    require("torch")
    import torch

    shape = gpt.SHAPES[name]
    with torch.device("meta"):  # the 1.3B model's 5 GB of weights stay unallocated
        model = torch_gpt.build(shape, shape.seq)
    assert sum(p.numel() for p in model.parameters()) == gpt.parameters(shape)
