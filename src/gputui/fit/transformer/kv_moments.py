"""What the KV cache holds at the two moments of generate that can be its peak, by mechanism.

transformers' DynamicCache (5.24, what `model.generate` uses for a decoder):
  * prefill: each layer's `update` concatenates the prompt's K and V onto an empty
    tensor, so the cache owns a copy of exactly its size. It is not a view of the
    (fused) qkv projection's output: that output, q and the layer's k and v before the
    copy, are the attention moment's activations (activations.py), freed with the layer.
  * a sliding-window layer (DynamicSlidingWindowLayer, chosen from the config's
    `sliding_window` or `layer_types`) shows the last window - 1 tokens, but as a view
    into the tensor its torch.cat made: after the prefill that is the whole prompt's
    K and V, so at the prefill every layer holds every prompt token; after a decode step
    it is a tensor of min(tokens, window) tokens.
  * decode: the last step feeds the token before the last one generated (that one is
    never fed back), so at the end the cache holds prompt + new - 1 tokens. Each step's
    torch.cat writes a layer's new K while its old K is alive, then the same for V: one
    layer's K of the old length is the step's extra (reported as workspace).

Elsewhere the cache is kv.py's figure at prompt and at prompt + new tokens, with one
layer's K more while a contiguous cache is grown: a paged engine (vLLM) allocates blocks
and concatenates nothing, llama.cpp (the default for a GGUF) allocates the whole context's
cache up front (already at the prefill) and concatenates nothing either, the MLA latent
is what serving engines keep, and T5's decoder caches the encoder's tokens for its cross
attention beside its own; T5's prompt moment is its encoder's forward, before the decoder
has cached anything.
"""

from __future__ import annotations

from typing import Literal

from gputui.fit.transformer.kv import caches_kv, kv_cache_bytes
from gputui.fit.transformer.model import TransformerModel
from gputui.fit.transformer.workload import Workload

Moment = Literal["prompt", "context"]


def default_kv_dtype(model: TransformerModel, weights: str) -> str:
    """The cache's element type when none is asked for: transformers writes K and V in the
    dtype of the projections that make them (fp32 for fp32 weights; the 16-bit compute
    dtype otherwise, quantized weights included); llama.cpp's default cache type is f16."""
    return "fp32" if weights == "fp32" and model.kind != "gguf" else "fp16"


def dynamic_cache(model: TransformerModel, wl: Workload) -> bool:
    """Whether the cache is transformers' DynamicCache (the rules above)."""
    cfg = model.config
    return (
        wl.paged_block is None
        and wl.engine == "hf"
        and model.kind != "gguf"
        and cfg.encdec is None
        and not (cfg.mla is not None and wl.mla_cache == "latent")
    )


def decoded_context(model: TransformerModel, wl: Workload, seq: int) -> int:
    """Tokens the cache holds after the last decode step of a `seq`-token prompt."""
    fed_back = wl.new_tokens - 1 if dynamic_cache(model, wl) else wl.new_tokens
    return seq + max(0, fed_back)


def _concat_layer(model: TransformerModel, layers: range) -> int | None:
    """The layer whose K is largest while it grows: a full-attention one if there is one."""
    cfg = model.config
    caching = [i for i in layers if caches_kv(cfg, i)]
    full = [i for i in caching if not cfg.is_sliding(i)]
    chosen = full or caching
    return chosen[-1] if chosen else None


def cache_bytes(
    model: TransformerModel, wl: Workload, layers: range, tp: int, batch: int, seq: int,
    moment: Moment, concat: bool,
) -> tuple[float, float]:  # fmt: skip
    """(the cache, the concatenation's extra) for `batch` sequences of a `seq`-token prompt
    over `layers` on one GPU, at the prefill ("prompt") or after the last decode step."""
    cfg = model.config
    dyn = dynamic_cache(model, wl)

    def kv(tokens: int, span: range, window_cap: bool = True) -> float:
        return float(
            kv_cache_bytes(
                cfg,
                tokens,
                batch,
                wl.kv_dtype,
                layers=span,
                paged_block=wl.paged_block,
                mla_cache=wl.mla_cache,
                tp=tp,
                window_cap=window_cap,
            )  # fmt: skip
        )

    ctx = decoded_context(model, wl, seq)
    if moment == "prompt":
        if cfg.encdec is not None:
            return 0.0, 0.0  # T5 encodes the prompt before its decoder caches anything
        # llama.cpp allocates the whole context's cache when the context is created
        return kv(ctx if wl.engine == "llama.cpp" else seq, layers, window_cap=not dyn), 0.0
    total = kv(ctx, layers)
    if not concat or wl.paged_block or wl.engine != "hf":
        return total, 0.0
    if not dyn:
        return total, kv(ctx, range(layers[-1], layers[-1] + 1)) / 2
    layer = _concat_layer(model, layers)
    if layer is None:
        return total, 0.0
    return total, kv(max(0, ctx - 1), range(layer, layer + 1)) / 2
