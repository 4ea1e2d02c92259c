"""A UNet (four levels, 64 base channels) for 1-channel segmentation."""

from __future__ import annotations

import torch
from torch import nn


def _block(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
    )  # fmt: skip


class UNet(nn.Module):
    def __init__(self, base: int = 64, levels: int = 4, classes: int = 2) -> None:
        super().__init__()
        widths = [base * 2**i for i in range(levels + 1)]
        self.down = nn.ModuleList([_block(3 if i == 0 else widths[i - 1], widths[i])
                                   for i in range(levels)])  # fmt: skip
        self.pool = nn.MaxPool2d(2)
        self.bottom = _block(widths[levels - 1], widths[levels])
        self.up = nn.ModuleList([nn.ConvTranspose2d(widths[i + 1], widths[i], 2, 2)
                                 for i in reversed(range(levels))])  # fmt: skip
        self.dec = nn.ModuleList([_block(2 * widths[i], widths[i])
                                  for i in reversed(range(levels))])  # fmt: skip
        self.out = nn.Conv2d(base, classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skips = []
        for block in self.down:
            x = block(x)
            skips.append(x)
            x = self.pool(x)
        x = self.bottom(x)
        for up, dec, skip in zip(self.up, self.dec, reversed(skips), strict=True):
            x = dec(torch.cat([up(x), skip], dim=1))
        return self.out(x)


def build() -> nn.Module:
    return UNet()


def build_small() -> nn.Module:
    return UNet(base=8, levels=2)
