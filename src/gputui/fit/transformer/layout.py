"""Where a transformer's parameters are: its linear layers (what LoRA and quantizers
touch), embeddings, norms and small extras, per architecture.

Counts equal `transformers`' `num_parameters()` (tied embeddings counted once);
tests/fit/transformer checks them against counts generated with transformers itself.
"""

from __future__ import annotations

from dataclasses import replace

from gputui.fit.transformer.config import TransformerConfig
from gputui.fit.transformer.encoder_heads import HeadModule, head_modules, module_shape
from gputui.fit.transformer.layout_hybrid import family_layout
from gputui.fit.transformer.layout_parts import (
    PACKED_QKV,
    Block,
    Layout,
    Linear,
    _attention,
    _mlp,
    _moe_mlp,
    _norm,
)

__all__ = ["PACKED_QKV", "Block", "Layout", "Linear", "layout"]


def layout(cfg: TransformerConfig) -> Layout:
    lay = _text_layout(cfg)
    if cfg.vision is not None:
        return replace(lay, vision=cfg.vision.params)
    return lay


def _text_layout(cfg: TransformerConfig) -> Layout:
    if cfg.mamba is not None or cfg.encdec is not None:
        return family_layout(cfg)
    h = cfg.hidden_size
    emb_dim = cfg.embed_dim or h
    token = cfg.vocab_size * emb_dim
    embedding = token + cfg.learned_positions * h + cfg.token_types * h
    if cfg.family in ("bert", "distilbert") or cfg.embedding_norm:
        embedding += _norm(cfg, h)
    attn, attn_other = _attention(cfg)
    norms = cfg.norms_per_layer * _norm(cfg, h)
    blocks: list[Block] = []
    dense_lins = attn + _mlp(cfg, cfg.intermediate_size)
    if cfg.moe is None:
        blocks.append(Block(cfg.num_layers, tuple(dense_lins), attn_other + norms))
    else:
        dense_n = len(cfg.moe.dense_layers)
        if dense_n:
            blocks.append(Block(dense_n, tuple(dense_lins), attn_other + norms))
        moe_lins, moe_other = _moe_mlp(cfg)
        if cfg.num_layers - dense_n:
            blocks.append(
                Block(
                    cfg.num_layers - dense_n,
                    tuple(attn + moe_lins),
                    attn_other + norms + moe_other,
                    True,
                )
            )
    head: list[Linear] = []
    if emb_dim != h:
        head += [Linear("project_in", emb_dim, h), Linear("project_out", h, emb_dim)]
    lm_head = 0
    if not cfg.encoder and not cfg.tie_word_embeddings:
        lm_head = cfg.vocab_size * emb_dim + (
            cfg.vocab_size if cfg.family == "gptj" or cfg.lm_head_bias else 0
        )
    final = 0
    if not cfg.encoder and cfg.final_norm:
        final = _norm(cfg, h)
    layer_blocks: tuple[int, ...] = ()
    if cfg.encoder:
        extra, final = _encoder_head(cfg)
        head += extra
    if cfg.family == "modernbert":
        # ModernBERT's layer 0 has no attn_norm (its input is the embedding norm's output),
        # and the encoder ends in a final_norm before any head
        final += _norm(cfg, h)
        first = Block(1, tuple(dense_lins), attn_other + norms - _norm(cfg, h))
        blocks = [first, Block(cfg.num_layers - 1, tuple(dense_lins), attn_other + norms)]
        layer_blocks = (0,) + (1,) * (cfg.num_layers - 1)
    return Layout(embedding, token, lm_head, tuple(head), final, tuple(blocks), layer_blocks)


def _biased(cfg: TransformerConfig, m: HeadModule) -> bool:
    """Whether a head linear carries a bias: always, except where the config decides it
    (ModernBERT's classifier_bias on head.dense, decoder_bias on the decoder)."""
    head = cfg.encoder_head
    if m.kind == "dense":
        return head is None or head.dense_bias
    if m.tied:
        return head is None or head.decoder_bias
    return True


def _encoder_head(cfg: TransformerConfig) -> tuple[list[Linear], int]:
    """The linears of an encoder's head (encoder_heads.py's table) and its norm/bias params."""
    lins: list[Linear] = []
    other = 0
    tied = cfg.encoder_head is None or cfg.encoder_head.tied_decoder
    for m in head_modules(cfg):
        shape = module_shape(cfg, m)
        role = "pooler" if m.name == "pooler.dense" else m.name
        if m.kind == "norm":
            other += _norm(cfg, shape[0])
        elif m.kind == "bias":
            other += shape[0]
        elif not (tied and m.tied):
            lins.append(Linear(role, shape[0], shape[1], _biased(cfg, m)))
        elif m.tied == "weight" and _biased(cfg, m):
            other += shape[1]  # its own bias; the weight is the token embedding
    return lins, other
