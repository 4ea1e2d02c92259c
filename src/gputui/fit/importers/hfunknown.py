"""An unknown model_type: what its standard keys decide, and the range of what they do not.

hidden_size, num_hidden_layers, num_attention_heads, intermediate_size and vocab_size
fix the embeddings, the attention projections and the MLP's width, but not whether
the MLP is gated (two or three matrices), whether the linears carry biases, whether
the norms are LayerNorms, or (without tie_word_embeddings) whether the head is tied.
So the count is a range: the lower end is a bare decoder (ungated MLP, no biases,
RMS norms, tied head unless the config says otherwise), the upper end has every
extra (gated MLP, biases on every linear and the head, LayerNorms, untied head
unless the config says tied). The estimate is built on the upper end and says what
it assumed; it is not a bound on every architecture: a model with parts a Llama-style
decoder lacks (a task head, extra norms or projections, learned positions) holds more.
A masked-LM class (`architectures` ending in ForMaskedLM) is an encoder: no KV cache.
"""

from __future__ import annotations

from dataclasses import replace

from gputui.fit.importers.hfread import Keys, show
from gputui.fit.transformer.config import TransformerConfig
from gputui.fit.transformer.layout import layout


def is_masked_lm(k: Keys) -> bool:
    """Whether `architectures` names a masked-LM class: a bidirectional encoder."""
    arch = k.raw.get("architectures")
    return isinstance(arch, list) and any(
        isinstance(a, str) and a.endswith("ForMaskedLM") for a in arch
    )


def bounded(k: Keys, model_type: str, cfg: TransformerConfig) -> TransformerConfig:
    """`cfg` (read as a Llama-style decoder) turned into the upper end of the range, with
    the range and a note saying which parts are unknown."""
    if is_masked_lm(k):
        cfg = replace(cfg, encoder=True, sliding_window=None, layer_types=())
    tie_known = k.has("tie_word_embeddings")
    tie = k.flag("tie_word_embeddings", True)
    lower = replace(
        cfg, mlp="plain", qkv_bias=False, o_bias=False, mlp_bias=False, norm="rms",
        tie_word_embeddings=tie if tie_known else True, lm_head_bias=False,
    )  # fmt: skip
    upper = replace(
        cfg, mlp="gated", qkv_bias=True, o_bias=True, mlp_bias=True, norm="layer",
        tie_word_embeddings=tie if tie_known else False, lm_head_bias=not (tie_known and tie),
    )  # fmt: skip
    lo, hi = layout(lower).params, layout(upper).params
    unknown = "an MLP gated or not, biases, LayerNorm or RMSNorm"
    if not tie_known:
        unknown += ", a tied or untied head"
    kv = "" if k.has("num_key_value_heads") else "; K/V heads taken as num_attention_heads"
    note = (
        f"unknown model_type {show(model_type)}: parameters unknown, between {lo:,} and {hi:,} "
        f"for a Llama-style model with its standard keys (not known: {unknown}{kv}); the memory "
        "figures use the upper end of this range and assume Llama-style attention and "
        "activations; parts such a model lacks (a task head, extra norms or projections) "
        "would add to it"
    )
    return replace(upper, params_range=(lo, hi), warnings=upper.warnings + (note,))
