"""What a transformer can be: the documented bound of every size, and the cross-field rules.

Every importer (HF config.json, model folder and cache, GGUF metadata, a models
TOML table) ends in a TransformerConfig, whose construction runs `check_config`;
a TransformerModel runs `check_model` on the counts its files gave. So no path
reaches the memory model with a size no real model has, and no later product
(parameters x bytes x tokens x batch) can run away. Each bound admits the
largest models published today with 4-16x headroom (the `why` says which);
docs/fit.md's "Bounds" table is this module in prose.

The bounds are on the quantities, not the key names: `KEY_QUANTITY` says which
quantity each Hugging Face key holds, so `hfkeys.Keys` bounds a value as it
reads it and the message names the key the user wrote.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gputui.fit.transformer.config import TransformerConfig


@dataclass(frozen=True, slots=True)
class Bound:
    maximum: int
    why: str


BOUNDS: dict[str, Bound] = {
    "layers": Bound(2048, "Llama 3.1 405B has 126 layers"),
    "hidden": Bound(1 << 17, "Llama 3.1 405B: 16,384; Nemotron-4 340B: 18,432"),
    "heads": Bound(2048, "Llama 3.1 405B and DeepSeek-V3: 128"),
    "head_dim": Bound(4096, "Gemma: 256"),
    "intermediate": Bound(1 << 19, "Nemotron-4 340B: 73,728; Llama 3.1 405B: 53,248"),
    "vocab": Bound(1 << 22, "Gemma 3: 262,144"),
    "positions": Bound(1 << 27, "Llama 4 Scout: 10M tokens"),
    "experts": Bound(4096, "Kimi K2: 384; DeepSeek-V3: 256"),
    "top_k": Bound(4096, "DeepSeek-V3: 8 of 256 (and never more than the experts)"),
    "mla_rank": Bound(1 << 16, "DeepSeek-V3: q 1,536, kv 512"),
    "token_types": Bound(1024, "BERT: 2"),
    "seq_len": Bound(1 << 27, "as positions: a 10M-token context"),
    "new_tokens": Bound(1 << 27, "as positions"),
    "batch": Bound(1 << 20, "serving batches of thousands of sequences"),
    "lora_rank": Bound(1 << 16, "LoRA ranks of 8-1,024; above the width it is no longer low rank"),
    "gpus": Bound(1 << 16, "clusters of tens of thousands of GPUs"),
    "grad_accum": Bound(1 << 20, "thousands of micro-batches per step"),
    "block": Bound(1 << 20, "vLLM: 16-token KV blocks"),
    "group_size": Bound(1 << 20, "GPTQ/AWQ: 32-128 weights per scale"),
    "other": Bound(1 << 31, "no config key gputui reads is near it"),
}
# products, so no later arithmetic explodes
MAX_PARAMS = 1 << 45  # 35T parameters: Llama 4 Behemoth has 2T
MAX_BYTES = 1 << 48  # 256 TiB of stored weights: 35T parameters at up to 8 bytes each
PRODUCT_WHY = {
    "parameters": "35T: Llama 4 Behemoth has 2T",
    "bytes": "256 TiB of stored weights",
}

# Hugging Face key -> the quantity it holds (a key not listed is bounded as "other")
KEY_QUANTITY = {
    **dict.fromkeys(
        ("num_hidden_layers", "n_layer", "n_layers", "sliding_window_pattern",
         "decoder_sparse_step", "moe_layer_freq", "first_k_dense_replace"), "layers"),
    **dict.fromkeys(("hidden_size", "n_embd", "dim", "word_embed_proj_dim"), "hidden"),
    **dict.fromkeys(
        ("num_attention_heads", "n_head", "n_heads", "num_key_value_heads"), "heads"),
    **dict.fromkeys(("head_dim", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"), "head_dim"),
    **dict.fromkeys(
        ("intermediate_size", "n_inner", "ffn_dim", "hidden_dim", "moe_intermediate_size",
         "shared_expert_intermediate_size"), "intermediate"),
    "vocab_size": "vocab",
    **dict.fromkeys(("max_position_embeddings", "n_positions", "sliding_window"), "positions"),
    **dict.fromkeys(
        ("num_local_experts", "num_experts", "n_routed_experts", "n_shared_experts"), "experts"),
    **dict.fromkeys(("num_experts_per_tok", "experts_per_token"), "top_k"),
    **dict.fromkeys(("q_lora_rank", "kv_lora_rank"), "mla_rank"),
    "type_vocab_size": "token_types",
    **dict.fromkeys(("group_size", "q_group_size"), "group_size"),
}  # fmt: skip

# TransformerConfig field -> (quantity, the Hugging Face key messages name)
FIELDS = {
    "hidden_size": ("hidden", "hidden_size"),
    "num_layers": ("layers", "num_hidden_layers"),
    "num_heads": ("heads", "num_attention_heads"),
    "num_kv_heads": ("heads", "num_key_value_heads"),
    "head_dim": ("head_dim", "head_dim"),
    "intermediate_size": ("intermediate", "intermediate_size"),
    "vocab_size": ("vocab", "vocab_size"),
    "max_position_embeddings": ("positions", "max_position_embeddings"),
    "sliding_window": ("positions", "sliding_window"),
    "token_types": ("token_types", "type_vocab_size"),
    "embed_dim": ("hidden", "word_embed_proj_dim"),
}
MOE_FIELDS = {
    "num_experts": ("experts", "num_experts"),
    "experts_per_token": ("top_k", "num_experts_per_tok"),
    "expert_intermediate": ("intermediate", "moe_intermediate_size"),
    "shared_intermediate": ("intermediate", "shared_expert_intermediate_size"),
}
MLA_FIELDS = {
    "q_lora_rank": ("mla_rank", "q_lora_rank"),
    "kv_lora_rank": ("mla_rank", "kv_lora_rank"),
    "qk_nope_head_dim": ("head_dim", "qk_nope_head_dim"),
    "qk_rope_head_dim": ("head_dim", "qk_rope_head_dim"),
    "v_head_dim": ("head_dim", "v_head_dim"),
}
LAYER_KINDS = ("sliding", "full")


class ConfigError(ValueError):
    """A config value that is missing, wrong or out of bounds: `field` names the key, for one
    clear line (config.py re-exports it: importers catch it there)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def quantity_of(key: str) -> str:
    """The quantity a Hugging Face key holds ("other" for a key without its own bound)."""
    return KEY_QUANTITY.get(key.rsplit(".", 1)[-1], "other")


def bound_of(quantity: str) -> int:
    return BOUNDS[quantity].maximum


def check_int(field: str, value: object, quantity: str, minimum: int = 1) -> int:
    """`value` as an integer in minimum..bound(quantity), or ConfigError naming `field`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(field, f"must be an integer, got {show(value)}")
    if value < minimum:
        raise ConfigError(field, f"must be >= {minimum}, got {value}")
    top = bound_of(quantity)
    if value > top:
        raise ConfigError(field, f"{show(value)} is over the bound {top}")
    return value


def check_fraction(field: str, value: float) -> float:
    """A dropout probability: finite, in 0..1."""
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ConfigError(field, f"must be a probability between 0 and 1, got {value!r}")
    return value


def show(value: object) -> str:
    """A value for a message, short: a 10**4000 integer is not printed whole."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return f"an integer of {len(str(abs(value)))} digits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_config(cfg: TransformerConfig) -> None:
    """Every size of `cfg` within its bound and every cross-field rule (ConfigError naming the
    Hugging Face key, with `cfg.key_prefix` such as "text_config.")."""
    p = cfg.key_prefix
    for name, (quantity, key) in FIELDS.items():
        value = getattr(cfg, name)
        if value is not None:
            check_int(p + key, value, quantity, 0 if name == "token_types" else 1)
    top = bound_of("positions") + 2  # OPT's table has two rows more than its positions
    if not 0 <= cfg.learned_positions <= top:
        raise ConfigError(
            p + "max_position_embeddings", f"{cfg.learned_positions} is over the bound {top}"
        )
    if not 0 <= cfg.norms_per_layer <= 8:
        raise ConfigError(p + "model_type", f"norms per layer {cfg.norms_per_layer} outside 0..8")
    if cfg.num_kv_heads > cfg.num_heads or cfg.num_heads % cfg.num_kv_heads:
        raise ConfigError(
            p + "num_key_value_heads",
            f"{cfg.num_kv_heads} does not divide num_attention_heads {cfg.num_heads}",
        )
    if cfg.layer_types:
        if len(cfg.layer_types) != cfg.num_layers:
            raise ConfigError(
                p + "layer_types",
                f"has {len(cfg.layer_types)} entries for {cfg.num_layers} layers",
            )
        bad = [t for t in cfg.layer_types if t not in LAYER_KINDS]
        if bad:
            raise ConfigError(p + "layer_types", f"unknown layer type {show(bad[0])}")
    check_fraction(p + "attention_dropout", cfg.attention_dropout)
    check_fraction(p + "hidden_dropout", cfg.hidden_dropout)
    if cfg.moe is not None:
        for name, (quantity, key) in MOE_FIELDS.items():
            check_int(p + key, getattr(cfg.moe, name), quantity, 0 if "shared" in name else 1)
        if cfg.moe.experts_per_token > cfg.moe.num_experts:
            raise ConfigError(
                p + "num_experts_per_tok",
                f"{cfg.moe.experts_per_token} is more than the {cfg.moe.num_experts} experts",
            )
        if any(not 0 <= i < cfg.num_layers for i in cfg.moe.dense_layers):
            raise ConfigError(
                p + "mlp_only_layers", f"a layer index outside 0..{cfg.num_layers - 1}"
            )
    if cfg.mla is not None:
        for name, (quantity, key) in MLA_FIELDS.items():
            value = getattr(cfg.mla, name)
            if value is not None:
                check_int(p + key, value, quantity)


def check_counts(exact_params: int | None, stored_bytes: int | None, params: int) -> None:
    """The parameter count the sizes describe, and what the checkpoint's files said, bounded."""
    for name, value, top in (
        ("parameters", params, MAX_PARAMS),
        ("parameters in the checkpoint", exact_params, MAX_PARAMS),
        ("bytes of stored weights", stored_bytes, MAX_BYTES),
    ):
        if value is None:
            continue
        if value < 0:
            raise ConfigError(name, f"negative ({value})")
        if value > top:
            what = PRODUCT_WHY["bytes" if "bytes" in name else "parameters"]
            raise ConfigError(name, f"{value:,} is over the bound {top:,} ({what})")
