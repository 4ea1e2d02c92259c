"""ResNet-50 in plain torch.nn (torchvision's layout), for `gputui fit --torch`.

    gputui fit --torch examples/torch/resnet.py:build --input-shape 3,224,224 --gpu "RTX 4090"
    gputui fit --torch examples/torch/resnet.py:build --inputs examples/torch/resnet.py:inputs \
        --loss examples/torch/resnet.py:loss --gpu "RTX 4090"
"""

from __future__ import annotations

import torch
from torch import nn


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        width = planes
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample: nn.Module | None = None
        if stride != 1 or inplanes != planes * 4:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, planes * 4, 1, stride, bias=False), nn.BatchNorm2d(planes * 4)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(
        self, layers: tuple[int, ...] = (3, 4, 6, 3), classes: int = 1000, width: int = 64
    ) -> None:
        super().__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        stages = []
        for i, blocks in enumerate(layers):
            planes = width * 2**i
            stride = 1 if i == 0 else 2
            group = [Bottleneck(self.inplanes, planes, stride)]
            self.inplanes = planes * 4
            group += [Bottleneck(self.inplanes, planes) for _ in range(1, blocks)]
            stages.append(nn.Sequential(*group))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(self.inplanes, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def build() -> nn.Module:
    """ResNet-50."""
    return ResNet()


def build_small() -> nn.Module:
    """A ResNet-50-shaped network a sixteenth as wide, with one block per stage (tests)."""
    return ResNet((1, 1, 1, 1), classes=10, width=8)


def inputs(batch: int) -> torch.Tensor:
    return torch.randn(batch, 3, 224, 224)


def small_inputs(batch: int) -> torch.Tensor:
    return torch.randn(batch, 3, 32, 32)


def loss(output: torch.Tensor, batch: int) -> torch.Tensor:
    """Cross-entropy against labels the function makes itself."""
    target = torch.zeros(batch, dtype=torch.long)
    return nn.functional.cross_entropy(output, target)


def build_half_frozen() -> nn.Module:
    """Fine-tuning with a half-frozen backbone: the stem and the first two stages frozen."""
    model = ResNet()
    for part in (model.conv1, model.bn1, model.layer1, model.layer2):
        part.requires_grad_(False)
    return model
