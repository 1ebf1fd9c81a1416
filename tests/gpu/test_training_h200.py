"""A training run on a real GPU, watched by the agent's sampler: the figures are a GPU's, the
GPU is busy while it runs, and NVML lists the rank among the GPU's processes."""

from __future__ import annotations

import pytest

from dltui.bench.training import run_models
from dltui.protocol.bench_plans import ModelPlan
from dltui.protocol.bench_results import ModelResult
from tests.gpu.recorder import Recorder, torch_cuda

pytestmark = pytest.mark.gpu


def test_an_eager_resnet50_run_on_the_gpu_is_seen_by_the_sampler(gateway):
    torch_cuda()
    plan = ModelPlan(models=["resnet50"], batch=128, compile=False, warmup=5, steps=40)
    results: list[ModelResult] = []
    with Recorder() as recorder:
        run_models(plan, results.append, lambda *_: None, lambda: False)
        samples = list(recorder.samples)
    (result,) = results
    assert result.error is None, result.error
    assert (result.device, result.precision, result.channels_last) == ("cuda", "bf16", True)
    assert not result.compiled and result.batch == 128
    assert result.images_per_s > 1000  # an H200 does ~4,700 eager; a CPU does ~20
    assert result.reference is not None and result.reference_images_per_s == 219.0
    busy = [s.gpus[0].values.get("util_gpu", 0) for s in samples]
    assert max(busy) >= 90
    listed = {p.pid for s in samples for g in s.gpus for p in (g.processes or [])}
    assert listed, "no GPU process was ever listed while the rank trained"
