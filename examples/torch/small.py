"""Small models: an MLP, a 1-D conv audio classifier, a text transformer encoder and a VAE."""

from __future__ import annotations

import torch
from torch import nn


def mlp() -> nn.Module:
    """An MLP on flattened 28x28 images."""
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 2048), nn.ReLU(), nn.Linear(2048, 2048),
                         nn.ReLU(), nn.Linear(2048, 10))  # fmt: skip


def audio_cnn() -> nn.Module:
    """A 1-D conv classifier on 16,000-sample clips (M5-style)."""

    def block(cin: int, cout: int, k: int, s: int = 1) -> list[nn.Module]:
        return [nn.Conv1d(cin, cout, k, s), nn.BatchNorm1d(cout), nn.ReLU(), nn.MaxPool1d(4)]

    return nn.Sequential(*block(1, 128, 80, 4), *block(128, 128, 3), *block(128, 256, 3),
                         *block(256, 512, 3), nn.AdaptiveAvgPool1d(1), nn.Flatten(),
                         nn.Linear(512, 35))  # fmt: skip


class TextEncoder(nn.Module):
    """A BERT-base-shaped encoder (6 layers) classifying 128-token texts."""

    def __init__(self, vocab: int = 30_522, width: int = 768, layers: int = 6) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.zeros(1, 128, width))
        layer = nn.TransformerEncoderLayer(width, 12, 4 * width, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, 2)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embed(tokens) + self.pos)[:, 0])


def text_encoder() -> nn.Module:
    return TextEncoder()


def text_inputs(batch: int) -> torch.Tensor:
    return torch.randint(0, 30_522, (batch, 128))


class VAE(nn.Module):
    """A dense VAE on 28x28 images; forward returns the loss as `.loss` would."""

    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 64))
        self.dec = nn.Sequential(nn.Linear(32, 512), nn.ReLU(), nn.Linear(512, 784))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mu, logvar = self.enc(x).chunk(2, dim=1)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        recon = self.dec(z)
        kl = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum()
        return nn.functional.mse_loss(recon, x.flatten(1), reduction="sum") + kl


def vae() -> nn.Module:
    return VAE()
