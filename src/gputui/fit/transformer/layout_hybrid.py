"""Layouts whose layers are not all alike: Jamba (Mamba or attention, dense or MoE MLP per
layer) and T5 (an encoder stack, then a decoder stack with cross-attention).

Each kind of layer is one Block; Layout.layer_blocks says which block every layer is,
so memory, KV cache and activations walk the real sequence of layers. The module
table of each (transformers' `modeling_jamba.py`, `modeling_t5.py`):

* Jamba Mamba mixer: in_proj (h -> 2 inner), conv1d (inner x d_conv, + bias), x_proj
  (inner -> dt_rank + 2 d_state), dt_proj (dt_rank -> inner, + bias), A_log
  (inner x d_state), D (inner), out_proj (inner -> h), RMS norms on dt (dt_rank), B and
  C (d_state each);
* T5 layer: q, k, v, o (h <-> heads x d_kv, no bias), an RMS norm per sub-layer,
  DenseReluDense wi/wo (or wi_0, wi_1, wo when gated); the decoder adds EncDecAttention
  q, k, v, o; layer 0 of each stack owns the relative position bias (buckets x heads).
"""

from __future__ import annotations

from gputui.fit.transformer.config import TransformerConfig
from gputui.fit.transformer.layout_parts import (
    Block,
    Layout,
    Linear,
    _attention,
    _mlp,
    _moe_mlp,
    _norm,
)


def _mamba(cfg: TransformerConfig) -> tuple[list[Linear], int]:
    m = cfg.mamba
    assert m is not None
    h, inner = cfg.hidden_size, m.inner
    lins = [
        Linear("mamba_in", h, 2 * inner, m.proj_bias),
        Linear("mamba_x", inner, m.dt_rank + 2 * m.d_state),
        Linear("mamba_dt", m.dt_rank, inner, True),
        Linear("mamba_out", inner, h, m.proj_bias),
    ]
    other = inner * m.d_conv + (inner if m.conv_bias else 0)  # the depthwise conv1d
    other += inner * m.d_state + inner  # A_log and D
    other += m.dt_rank + 2 * m.d_state  # dt, B and C RMS norms
    return lins, other


def _jamba(cfg: TransformerConfig) -> Layout:
    h = cfg.hidden_size
    norms = cfg.norms_per_layer * _norm(cfg, h)
    kinds: dict[tuple[bool, bool], int] = {}
    blocks: list[Block] = []
    layer_blocks: list[int] = []
    for i in range(cfg.num_layers):
        kind = (cfg.is_mamba_layer(i), cfg.is_moe_layer(i))
        if kind not in kinds:
            mixer, other = _mamba(cfg) if kind[0] else _attention(cfg)
            if kind[1]:
                ffn, ffn_other = _moe_mlp(cfg)
            else:
                ffn, ffn_other = _mlp(cfg, cfg.intermediate_size), 0
            kinds[kind] = len(blocks)
            blocks.append(Block(0, tuple(mixer + ffn), other + ffn_other + norms, kind[1]))
        layer_blocks.append(kinds[kind])
    counted = [
        Block(layer_blocks.count(j), b.linears, b.other, b.moe) for j, b in enumerate(blocks)
    ]
    token = cfg.vocab_size * h
    lm_head = 0 if cfg.tie_word_embeddings else token
    return Layout(token, token, lm_head, (), _norm(cfg, h), tuple(counted), tuple(layer_blocks))


def _t5(cfg: TransformerConfig) -> Layout:
    ed = cfg.encdec
    assert ed is not None
    h = cfg.hidden_size
    attn, _ = _attention(cfg)
    mlp = _mlp(cfg, cfg.intermediate_size)
    cross = [Linear(f"cross_{lin.role}", lin.in_features, lin.out_features) for lin in attn]
    enc = Block(ed.encoder_layers, tuple(attn + mlp), 2 * _norm(cfg, h))
    dec = Block(ed.decoder_layers, tuple(attn + cross + mlp), 3 * _norm(cfg, h))
    token = cfg.vocab_size * h
    relative = 2 * ed.relative_buckets * cfg.num_heads  # layer 0 of the encoder and decoder
    lm_head = 0 if cfg.tie_word_embeddings else token
    layer_blocks = (0,) * ed.encoder_layers + (1,) * ed.decoder_layers
    # the final RMS norms of both stacks
    return Layout(token + relative, token, lm_head, (), 2 * _norm(cfg, h), (enc, dec), layer_blocks)


def family_layout(cfg: TransformerConfig) -> Layout:
    """The layout of a config with Mamba layers or an encoder-decoder."""
    if cfg.encdec is not None:
        return _t5(cfg)
    return _jamba(cfg)
