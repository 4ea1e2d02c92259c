"""config.json readers for Falcon, BLOOM, StarCoder2, Phi(-2), Cohere, Jamba, T5 and ModernBERT.

Each reads its own keys (with its config class's defaults, hffamily_defaults.py) into
the switches that decide its modules: a fused query_key_value (Falcon, BLOOM),
multi-query or grouped K/V (Falcon), ALiBi instead of rotary (BLOOM, Falcon-RW),
attention and MLP in parallel off one norm (Phi, Cohere, Falcon), biases, LayerNorm
with or without a bias, an lm_head bias (Phi), Mamba layers (Jamba) and an
encoder-decoder with cross-attention (T5). Every problem is a ConfigError naming the key.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from gputui.fit.importers.hfread import Keys, show
from gputui.fit.transformer.config import ConfigError, EncDec, Mamba, Moe, TransformerConfig


def _alias(k: Keys, primary: str, *aliases: str) -> str:
    """The key a config uses: an alias the file wrote wins over the class's own name
    (transformers' attribute_map / n_embed), whose default is always there."""
    for a in aliases:
        if k.has(a):
            return a
    return primary


def _dtype(k: Keys) -> str | None:
    return k.text("torch_dtype") or k.text("dtype")


def _split(k: Keys, hidden: int, heads_key: str, hidden_key: str) -> tuple[int, int]:
    heads = k.integer(heads_key)
    if hidden % heads:
        raise ConfigError(k._field(heads_key), f"{heads} does not divide {hidden_key} {hidden}")
    return heads, hidden // heads


def _kv_heads(k: Keys, key: str, heads: int) -> int:
    kv = k.integer(key, heads)
    if kv > heads or heads % kv:
        raise ConfigError(k._field(key), f"{kv} does not divide the {heads} attention heads")
    return kv


def _falcon(k: Keys) -> TransformerConfig:
    hk = _alias(k, "hidden_size", "n_embed")
    h = k.integer(hk)
    lk = _alias(k, "num_hidden_layers", "n_layer")
    nk = _alias(k, "num_attention_heads", "n_head")
    heads, hd = _split(k, h, nk, hk)
    new = k.flag("new_decoder_architecture", False)
    parallel = k.flag("parallel_attn", True)
    if new:
        kv = _kv_heads(k, "num_kv_heads", heads)
        lns = k.integer("num_ln_in_parallel_attn", 2)
        norms = 2 if lns == 2 else (1 if parallel else 2)
    elif k.flag("multi_query", True):
        kv, norms = 1, 1 if parallel else 2
    else:
        kv, norms = heads, 1 if parallel else 2
    bias = k.flag("bias", False)
    alibi = k.flag("alibi", False)
    return TransformerConfig(
        "falcon", "falcon", h, k.integer(lk), heads, kv, hd,
        k.integer("ffn_hidden_size", 4 * h), k.integer("vocab_size"),
        None if alibi else k.opt_int("max_position_embeddings"),
        tie_word_embeddings=k.flag("tie_word_embeddings", True),
        norm="layer", mlp="plain", qkv_bias=bias, o_bias=bias, mlp_bias=bias,
        norms_per_layer=norms, parallel_attn=parallel, alibi=alibi, fused_qkv=True,
        fused_attention=not alibi and (new or kv == heads),
        attention_dropout=k.number("attention_dropout", 0.0),
        hidden_dropout=k.number("hidden_dropout", 0.0),
        torch_dtype=_dtype(k), activation=k.text("activation") or "gelu", key_prefix=k.prefix,
    )  # fmt: skip


def _bloom(k: Keys) -> TransformerConfig:
    hk = _alias(k, "hidden_size", "n_embed")
    h = k.integer(hk)
    heads, hd = _split(k, h, _alias(k, "n_head", "num_attention_heads"), hk)
    return TransformerConfig(
        "bloom", "bloom", h, k.integer(_alias(k, "n_layer", "num_hidden_layers")), heads, heads,
        hd, 4 * h, k.integer("vocab_size"), None,
        tie_word_embeddings=k.flag("tie_word_embeddings", True),
        norm="layer", mlp="plain", qkv_bias=True, o_bias=True, mlp_bias=True, alibi=True,
        fused_qkv=True, embedding_norm=True, fused_attention=False,
        attention_dropout=k.number("attention_dropout", 0.0),
        hidden_dropout=k.number("hidden_dropout", 0.0),
        torch_dtype=_dtype(k), activation="gelu_bloom", key_prefix=k.prefix,
    )  # fmt: skip


def _rope_decoder(k: Keys, model_type: str, **switches: Any) -> TransformerConfig:
    """StarCoder2, Phi, Cohere: the usual hidden_size / num_attention_heads keys."""
    h = k.integer("hidden_size")
    heads, hd = _split(k, h, "num_attention_heads", "hidden_size")
    kv = _kv_heads(k, "num_key_value_heads", heads)
    return TransformerConfig(
        model_type, switches.pop("family"), h, k.integer("num_hidden_layers"), heads, kv, hd,
        k.integer("intermediate_size"), k.integer("vocab_size"),
        k.opt_int("max_position_embeddings"),
        attention_dropout=k.number("attention_dropout", 0.0),
        torch_dtype=_dtype(k), activation=k.text("hidden_act") or "silu", key_prefix=k.prefix,
        **switches,
    )  # fmt: skip


def _starcoder2(k: Keys) -> TransformerConfig:
    bias = k.flag("use_bias", True)
    return _rope_decoder(
        k, "starcoder2", family="starcoder2",
        tie_word_embeddings=k.flag("tie_word_embeddings", True), norm="layer", mlp="plain",
        qkv_bias=bias, o_bias=bias, mlp_bias=bias,
        sliding_window=k.opt_int("sliding_window"),
        hidden_dropout=k.number("residual_dropout", 0.0),
    )  # fmt: skip


def _phi(k: Keys) -> TransformerConfig:
    return _rope_decoder(
        k, "phi", family="phi", tie_word_embeddings=k.flag("tie_word_embeddings", False),
        norm="layer", mlp="plain", qkv_bias=True, o_bias=True, mlp_bias=True,
        norms_per_layer=1, parallel_attn=True, lm_head_bias=True,
        qk_norm="head_ln" if k.flag("qk_layernorm", False) else "none",
        hidden_dropout=k.number("resid_pdrop", 0.0),
    )  # fmt: skip


def _cohere(k: Keys) -> TransformerConfig:
    bias = k.flag("attention_bias", False)
    return _rope_decoder(
        k, "cohere", family="cohere", tie_word_embeddings=k.flag("tie_word_embeddings", True),
        norm="layer_nobias", qkv_bias=bias, o_bias=bias, norms_per_layer=1, parallel_attn=True,
        qk_norm="full" if k.flag("use_qk_norm", False) else "none",
        logit_scale=k.number("logit_scale", 0.0625) != 1.0,
    )  # fmt: skip


def _every(k: Keys, layers: int, period_key: str, offset_key: str) -> tuple[int, ...]:
    """The layers i with i % period == offset (Jamba's attention and expert layers)."""
    period = k.integer(period_key)
    offset = k.integer(offset_key, minimum=0)
    if offset >= period:
        raise ConfigError(
            k._field(offset_key), f"{offset} must be smaller than {period_key} {period}"
        )
    return tuple(i for i in range(layers) if i % period == offset)


def _jamba(k: Keys) -> TransformerConfig:
    cfg = _rope_decoder(
        k, "jamba", family="jamba", tie_word_embeddings=k.flag("tie_word_embeddings", False)
    )
    h, layers = cfg.hidden_size, cfg.num_layers
    attn = _every(k, layers, "attn_layer_period", "attn_layer_offset")
    raw_rank = k.raw.get("mamba_dt_rank", "auto")
    if raw_rank == "auto":
        rank = math.ceil(h / 16)
    elif isinstance(raw_rank, int) and not isinstance(raw_rank, bool):
        rank = k.integer("mamba_dt_rank")
    else:
        raise ConfigError(
            k._field("mamba_dt_rank"), f'must be an integer or "auto", got {show(raw_rank)}'
        )
    mamba = Mamba(
        tuple(i for i in range(layers) if i not in attn),
        k.integer("mamba_expand") * h, k.integer("mamba_d_state"), k.integer("mamba_d_conv"),
        rank, k.flag("mamba_conv_bias", True), k.flag("mamba_proj_bias", False),
    )  # fmt: skip
    experts = k.integer("num_experts")
    moe = None
    if experts > 1:
        sparse = _every(k, layers, "expert_layer_period", "expert_layer_offset")
        top = k.integer("num_experts_per_tok")
        if top > experts:
            raise ConfigError(
                k._field("num_experts_per_tok"), f"{top} is more than the {experts} experts"
            )
        dense = tuple(i for i in range(layers) if i not in sparse)
        moe = Moe(experts, top, cfg.intermediate_size, dense_layers=dense)
    from dataclasses import replace

    note = (
        f"Jamba: {len(mamba.layers)} of {layers} layers are Mamba mixers, which cache no K/V; "
        "their fixed state per sequence (conv + SSM) is counted in kv_cache; their activations "
        "follow the mamba-ssm CUDA kernels on CUDA and transformers' slow path elsewhere"
    )
    return replace(cfg, mamba=mamba, moe=moe, warnings=cfg.warnings + (note,))


def _t5(k: Keys) -> TransformerConfig:
    h = k.integer(_alias(k, "d_model", "hidden_size"))
    heads = k.integer(_alias(k, "num_heads", "num_attention_heads"))
    enc = k.integer(_alias(k, "num_layers", "num_hidden_layers"))
    dec = k.integer("num_decoder_layers", enc)
    proj = k.text("feed_forward_proj") or "relu"
    parts = proj.split("-")
    if len(parts) > 2 or (len(parts) == 2 and parts[0] != "gated"):
        raise ConfigError(
            k._field("feed_forward_proj"), f'{show(proj)} is not "ACT" or "gated-ACT"'
        )
    act = "gelu_new" if proj == "gated-gelu" else parts[-1]
    drop = k.number("dropout_rate", 0.1)
    vocab = k.integer("vocab_size")
    notes: tuple[str, ...] = (
        f"T5 encoder-decoder: {enc} encoder and {dec} decoder layers; the target is taken as "
        "long as the input (seq); generation encodes the prompt and decodes the new tokens, "
        "kv_cache holding the decoder's self-attention and cross-attention K/V",
    )
    if not k.flag("tie_word_embeddings", True):
        # T5 v1.1 / Flan-T5 ship their own lm_head; transformers 5 ties it to `shared` anyway
        notes += (
            f"tie_word_embeddings is false: transformers 5 ties T5's lm_head to the shared "
            f"embedding anyway (counted once, as here); runtimes that keep the checkpoint's "
            f"own lm_head hold {vocab * h:,} parameters more",
        )
    return TransformerConfig(
        "t5", "t5", h, enc + dec, heads, heads, k.integer("d_kv"), k.integer("d_ff"),
        vocab, None, tie_word_embeddings=True, mlp="gated" if parts[0] == "gated" else "plain",
        attention_dropout=drop, hidden_dropout=drop, torch_dtype=_dtype(k), activation=act,
        encdec=EncDec(enc, dec, k.integer("relative_attention_num_buckets", 32)),
        # transformers 5.25 runs T5 under sdpa, its position bias as the float attn_mask
        fused_attention=True,
        key_prefix=k.prefix, warnings=notes,
    )  # fmt: skip


def _modernbert(k: Keys) -> TransformerConfig:
    """ModernBERT: a bidirectional encoder with a fused Wqkv, a GeGLU MLP whose Wi holds
    both halves, LayerNorms without biases (norm_bias) and no attn_norm on layer 0."""
    h = k.integer("hidden_size")
    heads, hd = _split(k, h, "num_attention_heads", "hidden_size")
    bias = k.flag("attention_bias", False)
    return TransformerConfig(
        "modernbert", "modernbert", h, k.integer("num_hidden_layers"), heads, heads, hd,
        k.integer("intermediate_size"), k.integer("vocab_size"),
        k.opt_int("max_position_embeddings"),
        tie_word_embeddings=k.flag("tie_word_embeddings", True),
        norm="layer" if k.flag("norm_bias", False) else "layer_nobias", mlp="gated",
        qkv_bias=bias, o_bias=bias, mlp_bias=k.flag("mlp_bias", False), embedding_norm=True,
        encoder=True, attention_dropout=k.number("attention_dropout", 0.0),
        hidden_dropout=k.number("mlp_dropout", 0.0), torch_dtype=_dtype(k),
        activation=k.text("hidden_activation") or "gelu", key_prefix=k.prefix,
    )  # fmt: skip


READERS: dict[str, Callable[[Keys], TransformerConfig]] = {
    "falcon": _falcon,
    "bloom": _bloom,
    "starcoder2": _starcoder2,
    "phi": _phi,
    "cohere": _cohere,
    "jamba": _jamba,
    "t5": _t5,
    "modernbert": _modernbert,
}
