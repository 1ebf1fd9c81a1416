"""The PyTorch zoo is torchvision's four networks: the same parameter counts, layer for layer.

torch and torchvision are imported by the test, not the module: every worker collects every
module, and a module that imported torch cost each of them ~3 s.
"""

from __future__ import annotations

import pytest

from dltui.bench.models import torch_zoo
from tests.conftest import require

require("torch", "torchvision")


def count(model) -> list[int]:
    return sorted(p.numel() for p in model.parameters())


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("resnet50", {}),
        ("vgg16", {}),
        ("alexnet", {}),
        ("googlenet", {"aux_logits": False, "init_weights": True}),
    ],
)
def test_same_parameters_as_torchvision(name, options):
    import torch
    from torchvision import models

    ours = torch_zoo.build(name, 1000)
    assert count(ours) == count(getattr(models, name)(**options))
    images = torch.zeros(2, 3, 224, 224)
    assert ours.eval()(images).shape == (2, 1000)
