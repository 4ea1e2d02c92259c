"""The pieces of a parameter layout (linears, blocks of identical layers, the model) and
the per-layer module rules (attention, MLP, MoE, norms) that layout.py and
layout_hybrid.py build from.

Counts equal `transformers`' `num_parameters()` (tied embeddings counted once).
"""

from __future__ import annotations

from dataclasses import dataclass

from gputui.fit.transformer.config import TransformerConfig

PACKED_QKV = "qkv_packed"  # a fused q/k/v linear whose cache is not a view of its output


@dataclass(frozen=True, slots=True)
class Linear:
    """`copies` identical (in, out) matrices: experts share one entry."""

    role: str  # q, k, v, o, qkv, gate, up, gate_up, down, fc_in, fc_out, router, ...
    in_features: int
    out_features: int
    bias: bool = False
    copies: int = 1
    expert: bool = False  # a routed expert: only experts_per_token of `copies` run per token

    @property
    def weight_params(self) -> int:
        return self.in_features * self.out_features * self.copies

    @property
    def bias_params(self) -> int:
        return self.out_features * self.copies if self.bias else 0

    @property
    def params(self) -> int:
        return self.weight_params + self.bias_params


@dataclass(frozen=True, slots=True)
class Block:
    """`count` identical transformer layers."""

    count: int
    linears: tuple[Linear, ...]
    other: int  # norms, attention sinks, router score biases: kept in 16/32 bit, never quantized
    moe: bool = False

    @property
    def params(self) -> int:
        return sum(lin.params for lin in self.linears) + self.other


@dataclass(frozen=True, slots=True)
class Layout:
    embedding: int  # token (+ position, token type) embeddings and their norm
    token_embedding: int  # the vocab x width table alone
    lm_head: int  # 0 when tied to the token embedding
    head_linears: tuple[Linear, ...]  # OPT's project in/out, an encoder's pooler and task head
    # norms and biases after the last block: the final norm, or an encoder head's LayerNorm
    # and its tied decoder's bias (16/32-bit extras, never quantized)
    final_norm: int
    blocks: tuple[Block, ...]
    # the block each layer is (an index into blocks); empty: dense blocks first, then MoE
    layer_blocks: tuple[int, ...] = ()
    vision: int = 0  # a multimodal model's vision tower and projector (held with the embedding)

    @property
    def params(self) -> int:
        return (
            self.vision
            + self.embedding
            + self.lm_head
            + sum(lin.params for lin in self.head_linears)
            + self.final_norm
            + sum(b.params * b.count for b in self.blocks)
        )

    @property
    def layers(self) -> int:
        return sum(b.count for b in self.blocks)

    def linears(self) -> list[tuple[Linear, int]]:
        """Every linear with how many layers hold it."""
        out = [(lin, b.count) for b in self.blocks for lin in b.linears]
        out += [(lin, 1) for lin in self.head_linears]
        return out

    @property
    def linear_weight_params(self) -> int:
        return sum(lin.weight_params * n for lin, n in self.linears())

    def largest_linear(self) -> int:
        return max((lin.in_features * lin.out_features for lin, _ in self.linears()), default=0)

    def active_params(self, experts_per_token: int) -> int:
        """Parameters one token reads: routed experts count only the chosen ones."""
        total = self.params
        for b in self.blocks:
            for lin in b.linears:
                if lin.expert:
                    total -= b.count * (lin.params - lin.params // lin.copies * experts_per_token)
        return total

    def expert_params(self) -> int:
        return sum(lin.params * b.count for b in self.blocks for lin in b.linears if lin.expert)


def _norm(cfg: TransformerConfig, width: int) -> int:
    return {"rms": width, "layer": 2 * width, "layer_nobias": width, "none": 0}[cfg.norm]


def _attention(cfg: TransformerConfig) -> tuple[list[Linear], int]:
    h = cfg.hidden_size
    if cfg.mla is not None:
        m = cfg.mla
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        lins: list[Linear] = []
        other = 0
        if m.q_lora_rank:
            lins += [
                Linear("q_a", h, m.q_lora_rank),
                Linear("q_b", m.q_lora_rank, cfg.num_heads * qk),
            ]
            other += m.q_lora_rank  # q_a_layernorm (RMS)
        else:
            lins.append(Linear("q", h, cfg.num_heads * qk))
        lins += [
            Linear("kv_a", h, m.kv_lora_rank + m.qk_rope_head_dim),
            Linear("kv_b", m.kv_lora_rank, cfg.num_heads * (m.qk_nope_head_dim + m.v_head_dim)),
            Linear("o", cfg.num_heads * m.v_head_dim, h),
        ]
        return lins, other + m.kv_lora_rank  # kv_a_layernorm
    q, kv = cfg.q_dim, cfg.kv_dim
    if cfg.family in ("gpt2", "gpt_neox", "modernbert"):
        lins = [Linear("qkv", h, 3 * h, cfg.qkv_bias)]
    elif cfg.family == "phi3":
        lins = [Linear("qkv", h, q + 2 * kv, cfg.qkv_bias)]
    elif cfg.fused_qkv:
        # Falcon's and BLOOM's query_key_value: K and V are copied out of it before caching
        lins = [Linear(PACKED_QKV, h, q + 2 * kv, cfg.qkv_bias)]
    else:
        lins = [
            Linear("q", h, q, cfg.qkv_bias),
            Linear("k", h, kv, cfg.qkv_bias),
            Linear("v", h, kv, cfg.qkv_bias),
        ]
    lins.append(Linear("o", q, h, cfg.o_bias))
    other = 0
    if cfg.qk_norm == "head":
        other += 2 * cfg.head_dim
    elif cfg.qk_norm == "full":
        other += q + kv
    elif cfg.qk_norm == "head_ln":
        other += 4 * cfg.head_dim  # Phi's q/k LayerNorms over head_dim, with biases
    if cfg.family == "gpt_oss":
        other += cfg.num_heads  # attention sinks
    return lins, other


def _mlp(
    cfg: TransformerConfig, width: int, prefix: str = "", expert: bool = False, copies: int = 1
) -> list[Linear]:
    h = cfg.hidden_size
    bias = cfg.mlp_bias
    if cfg.mlp == "plain":
        return [
            Linear(f"{prefix}fc_in", h, width, bias, copies, expert),
            Linear(f"{prefix}fc_out", width, h, bias, copies, expert),
        ]
    if cfg.family in ("phi3", "modernbert"):  # one linear holds gate and up (Wi)
        return [Linear("gate_up", h, 2 * width, bias), Linear("down", width, h, bias)]
    return [
        Linear(f"{prefix}gate", h, width, bias, copies, expert),
        Linear(f"{prefix}up", h, width, bias, copies, expert),
        Linear(f"{prefix}down", width, h, bias, copies, expert),
    ]


def _moe_mlp(cfg: TransformerConfig) -> tuple[list[Linear], int]:
    moe = cfg.moe
    assert moe is not None
    h = cfg.hidden_size
    e = moe.num_experts
    other = 0
    if cfg.family == "gpt_oss":
        lins = [
            Linear("router", h, e, moe.router_bias),
            Linear("expert_gate_up", h, 2 * moe.expert_intermediate, moe.expert_bias, e, True),
            Linear("expert_down", moe.expert_intermediate, h, moe.expert_bias, e, True),
        ]
        return lins, other
    lins = [Linear("router", h, e, moe.router_bias)]
    # DeepSeek-V3's e_score_correction_bias is a buffer in transformers, not a parameter
    lins += _mlp(cfg, moe.expert_intermediate, "expert_", True, e)
    if moe.shared_intermediate:
        lins += _mlp(cfg, moe.shared_intermediate, "shared_")
        if moe.shared_expert_gate:
            lins.append(Linear("shared_expert_gate", h, 1))
    return lins, other
