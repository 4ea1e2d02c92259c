"""ViT-B/16 in plain torch.nn (16x16 patches, 12 layers of width 768, 12 heads)."""

from __future__ import annotations

import torch
from torch import nn


class ViT(nn.Module):
    def __init__(self, image: int = 224, patch: int = 16, width: int = 768, layers: int = 12,
                 heads: int = 12, classes: int = 1000) -> None:  # fmt: skip
        super().__init__()
        self.patch = nn.Conv2d(3, width, patch, patch)
        tokens = (image // patch) ** 2 + 1
        self.cls = nn.Parameter(torch.zeros(1, 1, width))
        self.pos = nn.Parameter(torch.zeros(1, tokens, width))
        layer = nn.TransformerEncoderLayer(
            width, heads, 4 * width, dropout=0.0, activation="gelu", batch_first=True,
            norm_first=True,
        )  # fmt: skip
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.norm(self.encoder(x))[:, 0])


def build() -> nn.Module:
    return ViT()


def build_small() -> nn.Module:
    """A ViT of the same shape, 2 layers of width 192 on 64x64 images."""
    return ViT(image=64, width=192, layers=2, heads=3, classes=10)
