"""KV-cache bytes: per layer, K and V for every cached token, the way each attention kind stores them.

* multi-head / grouped-query: 2 x kv_heads x head_dim values per token per layer
  (grouped-query attention caches only its kv heads, not one per query head);
* sliding-window layers keep at most `sliding_window` tokens of storage: transformers'
  DynamicSlidingWindowLayer shows the last window - 1 tokens, a view into the tensor
  the step's torch.cat made (window tokens once the window is full); after a prefill
  that tensor is the whole prompt's (`window_cap=False`: the layer holds every token);
* MLA (DeepSeek-V2/V3) caches the compressed latent plus the shared rotary key,
  kv_lora_rank + qk_rope_head_dim values per token per layer (as vLLM, SGLang and
  llama.cpp do); `expanded` is what transformers' own eager/sdpa code caches;
* a paged cache (vLLM) rounds every sequence up to whole blocks;
* tensor parallelism splits kv heads across GPUs; when there are fewer kv heads
  than GPUs each GPU keeps one (replicated), and the MLA latent is replicated;
* multi-query attention (Falcon-7B) caches its one K/V head; Falcon's new decoder
  architecture caches its K/V groups (transformers 5.25 repeats them per query head only
  inside eager attention; 5.24 cached them broadcast to every head);
* Jamba's Mamba layers cache no K/V: each keeps a fixed state per sequence, its conv
  window (inner x d_conv, in the model's dtype) and its SSM state (inner x d_state,
  fp32 in transformers), counted here with the cache it replaces, and transformers 5.25
  keeps an int64 counter beside each such layer's state;
* T5: encoder layers cache nothing; each decoder layer caches its self-attention K/V
  for the generated tokens and its cross-attention K/V for the encoder's tokens, which
  together are the prompt + new tokens of `context` (the prompt is the encoder input).
"""

from __future__ import annotations

import math

from gputui.fit.transformer.config import TransformerConfig
from gputui.fit.transformer.formats import kv_bits
from gputui.fit.transformer.workload import MlaCache

MAMBA_COUNTERS = 8  # one int64 scalar beside each Mamba layer's state (transformers 5.25)


def values_per_token(cfg: TransformerConfig, mla_cache: MlaCache = "latent", tp: int = 1) -> int:
    """Cached values per token per layer on one GPU."""
    if cfg.mla is not None and mla_cache == "latent":
        return cfg.mla.kv_lora_rank + cfg.mla.qk_rope_head_dim
    if cfg.mla is not None:
        heads = math.ceil(cfg.num_heads / tp)
        return heads * (cfg.mla.qk_nope_head_dim + cfg.mla.qk_rope_head_dim + cfg.mla.v_head_dim)
    kv_heads = cfg.num_kv_heads
    heads = max(1, kv_heads // tp) if kv_heads >= tp else 1
    return 2 * heads * cfg.head_dim


def caches_kv(cfg: TransformerConfig, layer: int) -> bool:
    """Whether a layer keeps a K/V cache (not a Mamba layer, not a T5 encoder layer)."""
    if cfg.encdec is not None:
        return cfg.encdec.is_decoder_layer(layer)
    return not cfg.is_mamba_layer(layer)


def kv_layers(cfg: TransformerConfig) -> int:
    """How many layers keep a K/V cache."""
    return sum(caches_kv(cfg, i) for i in range(cfg.num_layers)) if not cfg.encoder else 0


def state_bytes(
    cfg: TransformerConfig, batch: int, dtype: str, layers: range | None = None, tp: int = 1
) -> int:
    """Jamba's Mamba state: per sequence and Mamba layer, whatever the context (0 without)."""
    m = cfg.mamba
    if m is None:
        return 0
    span = layers if layers is not None else range(cfg.num_layers)
    n = sum(cfg.is_mamba_layer(i) for i in span)
    conv = int(max(16, kv_bits(dtype))) // 8  # the model's dtype (never a quantized cache's)
    return math.ceil(n * m.state_bytes(conv) / tp) * batch + n * MAMBA_COUNTERS


def cached_tokens(
    cfg: TransformerConfig,
    layer: int,
    context: int,
    paged_block: int | None,
    window_cap: bool = True,
) -> int:
    """Tokens whose K/V one layer's storage holds (`window_cap` False: a sliding layer's
    storage is still the tensor of all `context` tokens, as after transformers' prefill)."""
    tokens = context
    if window_cap and cfg.is_sliding(layer) and cfg.sliding_window is not None:
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
    window_cap: bool = True,
) -> int:
    """Bytes of the cache for `batch` sequences of `context` tokens over `layers` (default all);
    `window_cap` False: sliding layers hold every token (cached_tokens)."""
    if cfg.encoder:
        return 0
    values = values_per_token(cfg, mla_cache, tp)
    bits = kv_bits(dtype)
    span = layers if layers is not None else range(cfg.num_layers)
    state = state_bytes(cfg, batch, dtype, span, tp)
    if cfg.mamba is not None or cfg.encdec is not None:
        cached = [i for i in span if caches_kv(cfg, i)]
        total_values = sum(
            values * cached_tokens(cfg, i, context, paged_block, window_cap) for i in cached
        )
        return math.ceil(total_values * bits / 8) * batch + state
    if cfg.sliding_window is None or not window_cap:  # every layer caches the same tokens
        total_values = values * cached_tokens(cfg, 0, context, paged_block, False) * len(span)
        return math.ceil(total_values * bits / 8) * batch
    total_values = 0
    for layer in span:
        total_values += values * cached_tokens(cfg, layer, context, paged_block, window_cap)
    return math.ceil(total_values * bits / 8) * batch


def kv_bytes_per_token(
    cfg: TransformerConfig, dtype: str = "fp16", mla_cache: MlaCache = "latent"
) -> float:
    """Bytes one more token adds while no window is full (the figure serving engines quote)."""
    layers = kv_layers(cfg) if cfg.mamba is not None or cfg.encdec is not None else cfg.num_layers
    return values_per_token(cfg, mla_cache) * layers * kv_bits(dtype) / 8
