"""KV-cache bytes: per layer, K and V for every cached token, the way each attention kind stores them.

* multi-head / grouped-query: 2 x kv_heads x head_dim values per token per layer
  (grouped-query attention caches only its kv heads, not one per query head);
* sliding-window layers keep at most `sliding_window` tokens;
* MLA (DeepSeek-V2/V3) caches the compressed latent plus the shared rotary key,
  kv_lora_rank + qk_rope_head_dim values per token per layer (as vLLM, SGLang and
  llama.cpp do); `expanded` is what transformers' own eager/sdpa code caches;
* a paged cache (vLLM) rounds every sequence up to whole blocks;
* tensor parallelism splits kv heads across GPUs; when there are fewer kv heads
  than GPUs each GPU keeps one (replicated), and the MLA latent is replicated.
"""

from __future__ import annotations

import math

from gputui.fit.transformer.config import TransformerConfig
from gputui.fit.transformer.formats import kv_bits
from gputui.fit.transformer.workload import MlaCache


def values_per_token(cfg: TransformerConfig, mla_cache: MlaCache = "latent", tp: int = 1) -> int:
    """Cached values per token per layer on one GPU."""
    if cfg.mla is not None and mla_cache == "latent":
        return cfg.mla.kv_lora_rank + cfg.mla.qk_rope_head_dim
    if cfg.mla is not None:
        heads = math.ceil(cfg.num_heads / tp)
        return heads * (cfg.mla.qk_nope_head_dim + cfg.mla.qk_rope_head_dim + cfg.mla.v_head_dim)
    heads = max(1, cfg.num_kv_heads // tp) if cfg.num_kv_heads >= tp else 1
    return 2 * heads * cfg.head_dim


def cached_tokens(cfg: TransformerConfig, layer: int, context: int, paged_block: int | None) -> int:
    tokens = context
    if cfg.is_sliding(layer) and cfg.sliding_window is not None:
        tokens = min(tokens, cfg.sliding_window)
    if paged_block:
        tokens = -(-tokens // paged_block) * paged_block
    return tokens


def kv_cache_bytes(
    cfg: TransformerConfig,
    context: int,
    batch: int = 1,
    dtype: str = "fp16",
    *,
    layers: range | None = None,
    paged_block: int | None = None,
    mla_cache: MlaCache = "latent",
    tp: int = 1,
) -> int:
    """Bytes of the cache for `batch` sequences of `context` tokens over `layers` (default all)."""
    if cfg.encoder:
        return 0
    values = values_per_token(cfg, mla_cache, tp)
    bits = kv_bits(dtype)
    span = layers if layers is not None else range(cfg.num_layers)
    if cfg.sliding_window is None:  # every layer caches the same tokens
        total_values = values * cached_tokens(cfg, 0, context, paged_block) * len(span)
        return math.ceil(total_values * bits / 8) * batch
    total_values = 0
    for layer in span:
        total_values += values * cached_tokens(cfg, layer, context, paged_block)
    return math.ceil(total_values * bits / 8) * batch


def kv_bytes_per_token(
    cfg: TransformerConfig, dtype: str = "fp16", mla_cache: MlaCache = "latent"
) -> float:
    """Bytes one more token adds while no window is full (the figure serving engines quote)."""
    return values_per_token(cfg, mla_cache) * cfg.num_layers * kv_bits(dtype) / 8
