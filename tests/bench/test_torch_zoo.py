"""The PyTorch zoo is torchvision's four networks: the same parameter counts, layer for layer.

torchvision is not installed where the suite usually runs (its wheels must match the torch build
exactly); the device machine has it, and this test runs there.
"""

from __future__ import annotations

import pytest

from dltui.bench.models import torch_zoo

torch = pytest.importorskip("torch")
models = pytest.importorskip("torchvision.models")


def count(model) -> list[int]:
    return sorted(p.numel() for p in model.parameters())


@pytest.mark.parametrize(
    ("name", "theirs"),
    [
        ("resnet50", lambda: models.resnet50()),
        ("vgg16", lambda: models.vgg16()),
        ("alexnet", lambda: models.alexnet()),
        ("googlenet", lambda: models.googlenet(aux_logits=False, init_weights=True)),
    ],
)
def test_same_parameters_as_torchvision(name, theirs):
    ours = torch_zoo.build(name, 1000)
    assert count(ours) == count(theirs())
    images = torch.zeros(2, 3, 224, 224)
    assert ours.eval()(images).shape == (2, 1000)
