"""The GGUF metadata key behind each Hugging Face key, for messages about a GGUF file.

importers/gguf.py turns a file's metadata into an HF-style dict and hands it to
hfkeys, so a bound or rule there names the HF key (`num_hidden_layers`). A user
of a GGUF file knows `llama.block_count`: `gguf_message` rewrites a ConfigError
to name that key (the HF name in brackets), and leaves keys with no GGUF
counterpart as they are.
"""

from __future__ import annotations

from gputui.fit.transformer.bounds import ConfigError

# HF key (as importers/gguf.py fills it) -> the GGUF key after "ARCH."
GGUF_KEY = {
    "hidden_size": "embedding_length",
    "n_embd": "embedding_length",
    "num_hidden_layers": "block_count",
    "n_layer": "block_count",
    "num_attention_heads": "attention.head_count",
    "n_head": "attention.head_count",
    "num_key_value_heads": "attention.head_count_kv",
    "intermediate_size": "feed_forward_length",
    "n_inner": "feed_forward_length",
    "vocab_size": "vocab_size",
    "max_position_embeddings": "context_length",
    "n_positions": "context_length",
    "head_dim": "attention.key_length",
    "sliding_window": "attention.sliding_window",
    "num_local_experts": "expert_count",
    "num_experts": "expert_count",
    "n_routed_experts": "expert_count",
    "num_experts_per_tok": "expert_used_count",
    "moe_intermediate_size": "expert_feed_forward_length",
    "shared_expert_intermediate_size": "expert_shared_feed_forward_length",
    "q_lora_rank": "attention.q_lora_rank",
    "kv_lora_rank": "attention.kv_lora_rank",
    "qk_rope_head_dim": "rope.dimension_count",
    "v_head_dim": "attention.value_length",
    "first_k_dense_replace": "leading_dense_block_count",
    "n_shared_experts": "expert_shared_count",
}


def gguf_field(field: str, arch: str) -> str:
    """`num_hidden_layers` -> `llama.block_count (num_hidden_layers)`; others unchanged."""
    key = GGUF_KEY.get(field)
    return f"{arch}.{key} ({field})" if key else field


def gguf_message(exc: ConfigError, arch: str) -> str:
    """The error's one line with its key, and any HF key it cites, named as in the file."""
    reason = exc.reason
    for hf, key in GGUF_KEY.items():
        reason = reason.replace(f"({hf})", f"({arch}.{key})")
    return f"{gguf_field(exc.field, arch)}: {reason}"
