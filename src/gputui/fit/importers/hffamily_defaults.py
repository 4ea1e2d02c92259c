"""The config-class defaults of the families in hffamilies.py, as transformers applies them.

Same rule as hfdefaults.py (transformers' `__init__` defaults for the keys gputui
reads; None defaults, which the readers derive, left out); scripts/gen_hf_fixtures.py
checks this table against transformers too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["FAMILY_DEFAULTS", "FAMILY_READ_KEYS"]

FAMILY_READ_KEYS = frozenset(
    [
        "activation", "alibi", "attention_bias", "attention_dropout", "attn_layer_offset",
        "attn_layer_period", "bias", "d_ff", "d_kv", "d_model", "dropout_rate",
        "expert_layer_offset", "expert_layer_period", "feed_forward_proj", "ffn_hidden_size",
        "hidden_act", "hidden_dropout", "hidden_size", "intermediate_size", "logit_scale", "mamba_conv_bias",
        "mamba_d_conv", "mamba_d_state", "mamba_dt_rank", "mamba_expand", "mamba_proj_bias",
        "max_position_embeddings", "multi_query", "n_head", "n_layer", "new_decoder_architecture",
        "num_attention_heads", "num_decoder_layers", "num_experts", "num_experts_per_tok",
        "num_heads", "num_hidden_layers", "num_key_value_heads", "num_kv_heads", "num_layers",
        "num_ln_in_parallel_attn", "parallel_attn", "qk_layernorm", "relative_attention_num_buckets",
        "resid_pdrop", "residual_dropout", "sliding_window", "tie_word_embeddings", "use_bias",
        "use_qk_norm", "vocab_size", "norm_bias", "mlp_bias", "mlp_dropout", "hidden_activation",
        "classifier_bias", "decoder_bias",
    ]
)  # fmt: skip

FAMILY_DEFAULTS: dict[str, Mapping[str, Any]] = {
    "falcon": {
        "vocab_size": 65024, "hidden_size": 4544, "num_hidden_layers": 32,
        "num_attention_heads": 71, "hidden_dropout": 0.0, "attention_dropout": 0.0,
        "alibi": False, "new_decoder_architecture": False, "multi_query": True,
        "parallel_attn": True, "bias": False, "max_position_embeddings": 2048,
        "activation": "gelu", "tie_word_embeddings": True,
    },
    "bloom": {
        "vocab_size": 250880, "hidden_size": 64, "n_layer": 2, "n_head": 8,
        "hidden_dropout": 0.0, "attention_dropout": 0.0, "tie_word_embeddings": True,
    },
    "starcoder2": {
        "vocab_size": 49152, "hidden_size": 3072, "intermediate_size": 12288,
        "num_hidden_layers": 30, "num_attention_heads": 24, "num_key_value_heads": 2,
        "hidden_act": "gelu_pytorch_tanh", "max_position_embeddings": 4096,
        "attention_dropout": 0.0, "residual_dropout": 0.0, "use_bias": True,
        "tie_word_embeddings": True,
    },
    "phi": {
        "vocab_size": 51200, "hidden_size": 2048, "intermediate_size": 8192,
        "num_hidden_layers": 24, "num_attention_heads": 32, "resid_pdrop": 0.0,
        "attention_dropout": 0.0, "hidden_act": "gelu_new", "max_position_embeddings": 2048,
        "tie_word_embeddings": False, "qk_layernorm": False,
    },
    "cohere": {
        "vocab_size": 256000, "hidden_size": 8192, "intermediate_size": 22528,
        "num_hidden_layers": 40, "num_attention_heads": 64, "hidden_act": "silu",
        "max_position_embeddings": 8192, "tie_word_embeddings": True, "attention_bias": False,
        "attention_dropout": 0.0, "use_qk_norm": False, "logit_scale": 0.0625,
    },
    "jamba": {
        "vocab_size": 65536, "tie_word_embeddings": False, "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "hidden_act": "silu", "max_position_embeddings": 262144,
        "attention_dropout": 0.0, "num_experts_per_tok": 2, "num_experts": 16,
        "expert_layer_period": 2, "expert_layer_offset": 1, "attn_layer_period": 8,
        "attn_layer_offset": 4, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2,
        "mamba_dt_rank": "auto", "mamba_conv_bias": True, "mamba_proj_bias": False,
    },
    "t5": {
        "vocab_size": 32128, "d_model": 512, "d_kv": 64, "d_ff": 2048, "num_layers": 6,
        "num_heads": 8, "relative_attention_num_buckets": 32, "dropout_rate": 0.1,
        "feed_forward_proj": "relu",
    },
    "modernbert": {
        "vocab_size": 50368, "hidden_size": 768, "intermediate_size": 1152,
        "num_hidden_layers": 22, "num_attention_heads": 12, "hidden_activation": "gelu",
        "max_position_embeddings": 8192, "norm_bias": False, "attention_bias": False,
        "attention_dropout": 0.0, "mlp_bias": False, "mlp_dropout": 0.0,
        "classifier_bias": False, "decoder_bias": True, "tie_word_embeddings": True,
    },
}  # fmt: skip
