"""The four CNNs in PyTorch, with torchvision's architectures (and the small CIFAR ResNet-20),
built here so the benchmark needs no torchvision (whose wheels must match the torch build exactly).

ResNet-50 is v1.5 (the stride on the 3×3 convolution), VGG-16 is configuration D without batch
norm, AlexNet is torchvision's one-tower variant, GoogLeNet is torchvision's Inception v1 with
batch norm and without the auxiliary heads (tf_cnn_benchmarks has none either; they are dropped
after training anyway). tests/gpu checks the parameter counts against torchvision where it is
installed.
"""

from __future__ import annotations

from typing import Any

from dltui.bench.models import INCEPTION_V1


def build(name: str, classes: int) -> Any:
    """A freshly initialised network by name."""
    import torch.nn as nn

    builders = {"resnet50": _resnet50, "vgg16": _vgg16, "googlenet": _googlenet,
                "alexnet": _alexnet, "resnet20": _resnet20}  # fmt: skip
    model = builders[name](nn, classes)
    for module in model.modules():
        if isinstance(module, nn.Conv2d):
            nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.BatchNorm2d):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, 0.0, 0.01)
            nn.init.zeros_(module.bias)
    return model


def _conv_bn(nn: Any, cin: int, cout: int, kernel: int, stride: int = 1, relu: bool = True,
             eps: float = 1e-5) -> Any:  # fmt: skip
    layers = [
        nn.Conv2d(cin, cout, kernel, stride, padding=kernel // 2, bias=False),
        nn.BatchNorm2d(cout, eps=eps),
    ]
    if relu:
        layers.append(nn.ReLU(inplace=True))
    return nn.Sequential(*layers)


def _residual(nn: Any, body: Any, cin: int, cout: int, stride: int) -> Any:
    """ReLU(body(x) + shortcut(x)): the shortcut a 1×1 projection where the shape changes."""

    class Residual(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = body
            self.shortcut = (
                _conv_bn(nn, cin, cout, 1, stride, relu=False)
                if stride != 1 or cin != cout
                else nn.Identity()
            )
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x: Any) -> Any:
            return self.relu(self.body(x) + self.shortcut(x))

    return Residual()


def _resnet50(nn: Any, classes: int) -> Any:
    def bottleneck(cin: int, width: int, stride: int) -> Any:
        body = nn.Sequential(
            _conv_bn(nn, cin, width, 1),
            _conv_bn(nn, width, width, 3, stride),
            _conv_bn(nn, width, width * 4, 1, relu=False),
        )
        return _residual(nn, body, cin, width * 4, stride)

    layers: list[Any] = [_conv_bn(nn, 3, 64, 7, 2), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for block in range(blocks):
            layers.append(bottleneck(cin, width, stride if block == 0 else 1))
            cin = width * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def _resnet20(nn: Any, classes: int) -> Any:
    """He et al.'s CIFAR ResNet-20: three stages of three basic blocks (16, 32, 64 filters),
    a 1×1 projection where the shape changes."""

    def basic(cin: int, cout: int, stride: int) -> Any:
        body = nn.Sequential(
            _conv_bn(nn, cin, cout, 3, stride), _conv_bn(nn, cout, cout, 3, relu=False)
        )
        return _residual(nn, body, cin, cout, stride)

    layers: list[Any] = [_conv_bn(nn, 3, 16, 3)]
    cin = 16
    for width, stride in ((16, 1), (32, 2), (64, 2)):
        for block in range(3):
            layers.append(basic(cin, width, stride if block == 0 else 1))
            cin = width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def _vgg16(nn: Any, classes: int) -> Any:
    layers: list[Any] = []
    cin = 3
    for width, convs in ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3)):
        for _ in range(convs):
            layers += [nn.Conv2d(cin, width, 3, padding=1), nn.ReLU(inplace=True)]
            cin = width
        layers.append(nn.MaxPool2d(2, 2))
    layers += [nn.AdaptiveAvgPool2d(7), nn.Flatten(), *_classifier(nn, 512 * 7 * 7, classes)]
    return nn.Sequential(*layers)


def _alexnet(nn: Any, classes: int) -> Any:
    def conv(cin: int, cout: int, kernel: int, stride: int = 1) -> list[Any]:
        return [nn.Conv2d(cin, cout, kernel, stride, padding=kernel // 2 if stride == 1 else 2),
                nn.ReLU(inplace=True)]  # fmt: skip

    return nn.Sequential(
        *conv(3, 64, 11, 4), nn.MaxPool2d(3, 2),
        *conv(64, 192, 5), nn.MaxPool2d(3, 2),
        *conv(192, 384, 3), *conv(384, 256, 3), *conv(256, 256, 3), nn.MaxPool2d(3, 2),
        nn.AdaptiveAvgPool2d(6), nn.Flatten(),
        *_classifier(nn, 256 * 6 * 6, classes, dropout_first=True),
    )  # fmt: skip


def _classifier(nn: Any, features: int, classes: int, dropout_first: bool = False) -> list[Any]:
    """Two 4096-wide layers with dropout: VGG puts dropout after each, AlexNet before."""
    if dropout_first:
        return [nn.Dropout(0.5), nn.Linear(features, 4096), nn.ReLU(inplace=True),
                nn.Dropout(0.5), nn.Linear(4096, 4096), nn.ReLU(inplace=True),
                nn.Linear(4096, classes)]  # fmt: skip
    return [nn.Linear(features, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5),
            nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5),
            nn.Linear(4096, classes)]  # fmt: skip


def _googlenet(nn: Any, classes: int) -> Any:
    import torch

    def conv(cin: int, cout: int, kernel: int, stride: int = 1) -> Any:
        return _conv_bn(nn, cin, cout, kernel, stride, eps=1e-3)

    class Inception(nn.Module):
        def __init__(self, cin: int, widths: tuple[int, ...]) -> None:
            super().__init__()
            # torchvision convolves 3×3 where the paper has 5×5; so do we, to match its cost.
            one, reduce3, three, reduce5, five, project = widths
            self.branches = nn.ModuleList([
                conv(cin, one, 1),
                nn.Sequential(conv(cin, reduce3, 1), conv(reduce3, three, 3)),
                nn.Sequential(conv(cin, reduce5, 1), conv(reduce5, five, 3)),
                nn.Sequential(nn.MaxPool2d(3, 1, 1, ceil_mode=True), conv(cin, project, 1)),
            ])  # fmt: skip
            self.width = one + three + five + project

        def forward(self, x: Any) -> Any:
            return torch.cat([branch(x) for branch in self.branches], 1)

    def pool(kernel: int = 3) -> Any:
        return nn.MaxPool2d(kernel, 2, ceil_mode=True)

    layers: list[Any] = [conv(3, 64, 7, 2), pool(), conv(64, 64, 1), conv(64, 192, 3), pool()]
    cin = 192
    for name, widths in INCEPTION_V1.items():
        if name in ("4a", "5a"):
            layers.append(pool(3 if name == "4a" else 2))
        module = Inception(cin, widths)
        layers.append(module)
        cin = module.width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)
