"""GPT-2 small (124M) from Hugging Face transformers (pip install transformers), built from
its config (no weights are downloaded), trained on 128-token sequences.

    gputui fit --torch examples/torch/gpt2.py:build --inputs examples/torch/gpt2.py:inputs \
        --gpu "RTX 4090"

The model's output has `.loss` (the labels are in the inputs), so no --loss is needed.
"""

from __future__ import annotations

from typing import Any

import torch

SEQ = 128


def build() -> Any:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(attn_implementation="sdpa")
    return GPT2LMHeadModel(config)


def inputs(batch: int) -> dict[str, torch.Tensor]:
    ids = torch.randint(0, 50_257, (batch, SEQ))
    return {"input_ids": ids, "labels": ids}
