"""A DCGAN generator step: G makes 64x64 images from noise, the discriminator judges them
(its parameters frozen for this step, as a GAN's generator update runs)."""

from __future__ import annotations

import torch
from torch import nn


def _generator(z: int = 100, w: int = 64) -> nn.Sequential:
    return nn.Sequential(
        nn.ConvTranspose2d(z, w * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(w * 8), nn.ReLU(True),
        nn.ConvTranspose2d(w * 8, w * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(w * 4), nn.ReLU(True),
        nn.ConvTranspose2d(w * 4, w * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(w * 2), nn.ReLU(True),
        nn.ConvTranspose2d(w * 2, w, 4, 2, 1, bias=False), nn.BatchNorm2d(w), nn.ReLU(True),
        nn.ConvTranspose2d(w, 3, 4, 2, 1, bias=False), nn.Tanh(),
    )  # fmt: skip


def _discriminator(w: int = 64) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(3, w, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, True),
        nn.Conv2d(w, w * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(w * 2), nn.LeakyReLU(0.2, True),
        nn.Conv2d(w * 2, w * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(w * 4), nn.LeakyReLU(0.2, True),
        nn.Conv2d(w * 4, w * 8, 4, 2, 1, bias=False), nn.BatchNorm2d(w * 8), nn.LeakyReLU(0.2, True),
        nn.Conv2d(w * 8, 1, 4, 1, 0, bias=False), nn.Flatten(),
    )  # fmt: skip


class GeneratorStep(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.generator = _generator()
        self.discriminator = _discriminator()
        self.discriminator.requires_grad_(False)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.discriminator(self.generator(z))


def build() -> nn.Module:
    return GeneratorStep()


def inputs(batch: int) -> torch.Tensor:
    return torch.randn(batch, 100, 1, 1)


def loss(output: torch.Tensor, batch: int) -> torch.Tensor:
    """The generator's loss: the discriminator should call its fakes real."""
    return nn.functional.binary_cross_entropy_with_logits(output, torch.ones(batch, 1))
