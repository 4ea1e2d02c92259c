"""Each supported model type's config-class defaults, as transformers applies them.

A real config.json leaves out every key equal to its class's `__init__` default
(gemma-3-4b-it's text_config has no num_attention_heads, num_key_value_heads or
head_dim); transformers fills them in, so gputui must too, or it refuses a model
transformers loads. The values are transformers' own `configuration_<type>.py`
`__init__` defaults for the keys gputui reads (None defaults, which the readers
derive, such as num_key_value_heads = num_attention_heads, are left out).
scripts/gen_hf_fixtures.py checks this table against transformers and writes
tests/fixtures/hf/config_defaults.json, which the suite compares without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gputui.fit.importers.hffamily_defaults import FAMILY_DEFAULTS

__all__ = ["DEFAULTS", "TEXT_MODEL_TYPE", "READ_KEYS", "with_defaults"]

# the keys gputui reads from some model type's config (what the check compares)
READ_KEYS = frozenset(
    [
        "_remove_final_layer_norm",
        "activation",
        "activation_function",
        "attention_bias",
        "attention_dropout",
        "attention_probs_dropout_prob",
        "attn_pdrop",
        "decoder_sparse_step",
        "dim",
        "do_layer_norm_before",
        "dropout",
        "enable_bias",
        "experts_per_token",
        "ffn_dim",
        "first_k_dense_replace",
        "head_dim",
        "hidden_act",
        "hidden_activation",
        "hidden_dim",
        "hidden_dropout",
        "hidden_dropout_prob",
        "hidden_size",
        "intermediate_size",
        "kv_lora_rank",
        "layer_norm_elementwise_affine",
        "logits_scaling",
        "max_position_embeddings",
        "mlp_bias",
        "moe_intermediate_size",
        "moe_layer_freq",
        "n_embd",
        "n_head",
        "n_heads",
        "n_inner",
        "n_layer",
        "n_layers",
        "n_positions",
        "n_routed_experts",
        "n_shared_experts",
        "num_attention_heads",
        "num_experts",
        "num_experts_per_tok",
        "num_hidden_layers",
        "num_key_value_heads",
        "num_local_experts",
        "q_lora_rank",
        "qk_nope_head_dim",
        "qk_rope_head_dim",
        "qkv_bias",
        "resid_pdrop",
        "shared_expert_intermediate_size",
        "sliding_window",
        "sliding_window_pattern",
        "tie_word_embeddings",
        "type_vocab_size",
        "use_sliding_window",
        "v_head_dim",
        "vocab_size",
        "word_embed_proj_dim",
    ]
)


def _without(row: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    """A shared row less the keys a config class does not have."""
    return {k: v for k, v in row.items() if k not in keys}


# Rows more than one model type shares: transformers gives these configs the same
# `__init__` defaults (apart from the keys a row names over them).
_LLAMA: Mapping[str, Any] = {
    "vocab_size": 32000,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "hidden_act": "silu",
    "max_position_embeddings": 2048,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "attention_dropout": 0.0,
    "mlp_bias": False,
}
_MISTRAL: Mapping[str, Any] = {
    "vocab_size": 32000,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "hidden_act": "silu",
    "max_position_embeddings": 131072,
    "tie_word_embeddings": False,
    "sliding_window": 4096,
    "attention_dropout": 0.0,
}
_BERT: Mapping[str, Any] = {
    "vocab_size": 30522,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "tie_word_embeddings": True,
}
# OLMo's config is Llama's without mlp_bias
_OLMO: Mapping[str, Any] = {**_without(_LLAMA, "mlp_bias"), "vocab_size": 50304}
_QWEN2: Mapping[str, Any] = {
    "vocab_size": 151936,
    "hidden_size": 4096,
    "intermediate_size": 22016,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "hidden_act": "silu",
    "max_position_embeddings": 32768,
    "tie_word_embeddings": False,
    "use_sliding_window": False,
    "sliding_window": 4096,
    "attention_dropout": 0.0,
}
_GEMMA2: Mapping[str, Any] = {
    "vocab_size": 256000,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 26,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh",
    "max_position_embeddings": 8192,
    "tie_word_embeddings": True,
    "attention_bias": False,
    "attention_dropout": 0.0,
    "sliding_window": 4096,
}

DEFAULTS: dict[str, Mapping[str, Any]] = {
    "gpt2": {
        "activation_function": "gelu_new",
        "vocab_size": 50257,
        "n_positions": 1024,
        "n_embd": 768,
        "n_layer": 12,
        "n_head": 12,
        "resid_pdrop": 0.1,
        "attn_pdrop": 0.1,
        "tie_word_embeddings": True,
    },
    "gpt_neox": {
        "vocab_size": 50432,
        "hidden_size": 6144,
        "num_hidden_layers": 44,
        "num_attention_heads": 64,
        "intermediate_size": 24576,
        "hidden_act": "gelu",
        "attention_dropout": 0.0,
        "hidden_dropout": 0.0,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": False,
        "attention_bias": True,
    },
    "gptj": {
        "activation_function": "gelu_new",
        "vocab_size": 50400,
        "n_positions": 2048,
        "n_embd": 4096,
        "n_layer": 28,
        "n_head": 16,
        "resid_pdrop": 0.0,
        "attn_pdrop": 0.0,
        "tie_word_embeddings": False,
    },
    "opt": {
        "activation_function": "relu",
        "vocab_size": 50272,
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "ffn_dim": 3072,
        "max_position_embeddings": 2048,
        "do_layer_norm_before": True,
        "_remove_final_layer_norm": False,
        "dropout": 0.1,
        "attention_dropout": 0.0,
        "num_attention_heads": 12,
        "enable_bias": True,
        "layer_norm_elementwise_affine": True,
        "tie_word_embeddings": True,
    },
    "bert": _BERT,
    "roberta": {**_BERT, "vocab_size": 50265},
    "xlm-roberta": _BERT,
    "camembert": _BERT,
    "distilbert": {
        "activation": "gelu",
        "vocab_size": 30522,
        "max_position_embeddings": 512,
        "n_layers": 6,
        "n_heads": 12,
        "dim": 768,
        "hidden_dim": 3072,
        "dropout": 0.1,
        "attention_dropout": 0.1,
        "tie_word_embeddings": True,
    },
    "llama": _LLAMA,
    "mistral": _MISTRAL,
    "mixtral": {
        **_without(_MISTRAL, "sliding_window"),
        "num_experts_per_tok": 2,
        "num_local_experts": 8,
    },
    "qwen2": _QWEN2,
    "qwen2_moe": {
        **_QWEN2,
        "hidden_size": 2048,
        "intermediate_size": 5632,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "decoder_sparse_step": 1,
        "moe_intermediate_size": 1408,
        "shared_expert_intermediate_size": 5632,
        "num_experts_per_tok": 4,
        "num_experts": 60,
        "qkv_bias": True,
    },
    "qwen3": {**_QWEN2, "head_dim": 128, "attention_bias": False},
    "qwen3_moe": {
        **_QWEN2,
        "hidden_size": 2048,
        "intermediate_size": 6144,
        "num_hidden_layers": 24,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "attention_bias": False,
        "decoder_sparse_step": 1,
        "moe_intermediate_size": 768,
        "num_experts_per_tok": 8,
        "num_experts": 128,
    },
    "gemma": {
        "vocab_size": 256000,
        "hidden_size": 3072,
        "intermediate_size": 24576,
        "num_hidden_layers": 28,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "head_dim": 256,
        "hidden_act": "gelu_pytorch_tanh",
        "max_position_embeddings": 8192,
        "tie_word_embeddings": True,
        "attention_bias": False,
        "attention_dropout": 0.0,
    },
    "gemma2": _GEMMA2,
    "gemma3_text": {**_GEMMA2, "vocab_size": 262208, "max_position_embeddings": 131072},
    "phi3": {
        "vocab_size": 32064,
        "hidden_size": 3072,
        "intermediate_size": 8192,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "resid_pdrop": 0.0,
        "attention_dropout": 0.0,
        "hidden_act": "silu",
        "max_position_embeddings": 4096,
        "tie_word_embeddings": False,
    },
    "olmo": _OLMO,
    "olmo2": _OLMO,
    "deepseek_v2": {
        **_LLAMA,
        "vocab_size": 102400,
        "first_k_dense_replace": 0,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "n_routed_experts": 64,
        "n_shared_experts": 2,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
        "moe_intermediate_size": 1407,
    },
    "deepseek_v3": {
        "vocab_size": 129280,
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "moe_intermediate_size": 2048,
        "num_hidden_layers": 61,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "n_shared_experts": 1,
        "n_routed_experts": 256,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
        "qk_nope_head_dim": 128,
        "num_experts_per_tok": 8,
        "first_k_dense_replace": 3,
        "hidden_act": "silu",
        "max_position_embeddings": 4096,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "attention_dropout": 0.0,
    },
    "gpt_oss": {
        "num_hidden_layers": 36,
        "num_local_experts": 128,
        "vocab_size": 201088,
        "hidden_size": 2880,
        "intermediate_size": 2880,
        "head_dim": 64,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "sliding_window": 128,
        "tie_word_embeddings": False,
        "hidden_act": "silu",
        "max_position_embeddings": 131072,
        "attention_dropout": 0.0,
        "num_experts_per_tok": 4,
        "attention_bias": True,
    },
}

# Granite is Llama's config with its multipliers (which hold no parameters)
DEFAULTS["granite"] = {**_LLAMA, "logits_scaling": 1.0}
DEFAULTS["smollm3"] = {
    "vocab_size": 128256,
    "hidden_size": 2048,
    "intermediate_size": 11008,
    "num_hidden_layers": 36,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "hidden_act": "silu",
    "max_position_embeddings": 32768,
    "tie_word_embeddings": True,
    "use_sliding_window": False,
    "attention_bias": False,
    "attention_dropout": 0.0,
    "mlp_bias": False,
}

# a multimodal config's text_config may leave out its model_type: its config class's default
TEXT_MODEL_TYPE = {"gemma3": "gemma3_text", "llava": "llama"}


def with_defaults(raw: Mapping[str, Any], model_type: str) -> dict[str, Any]:
    """`raw` over its class's defaults: a key present in `raw` wins, even as null, as in
    transformers (an explicit null `sliding_window` is no window, not the default)."""
    mt = TEXT_MODEL_TYPE.get(model_type, model_type)
    return {**DEFAULTS.get(mt, FAMILY_DEFAULTS.get(mt, {})), **raw}
