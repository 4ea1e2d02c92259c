"""An LSTM language model: embedding, 2 LSTM layers of 1024, tied-size softmax over 10k tokens.

    gputui fit --torch examples/torch/lstm_lm.py:build --inputs examples/torch/lstm_lm.py:inputs \
        --loss examples/torch/lstm_lm.py:loss --gpu "RTX 4090"
"""

from __future__ import annotations

import torch
from torch import nn

VOCAB, SEQ = 10_000, 64


class LstmLM(nn.Module):
    def __init__(self, vocab: int = VOCAB, width: int = 1024, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.lstm = nn.LSTM(width, width, layers, batch_first=True)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out)


def build() -> nn.Module:
    return LstmLM()


def inputs(batch: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, SEQ))


def loss(output: torch.Tensor, batch: int) -> torch.Tensor:
    target = torch.zeros(batch, SEQ, dtype=torch.long)
    return nn.functional.cross_entropy(output.reshape(-1, output.shape[-1]), target.reshape(-1))
