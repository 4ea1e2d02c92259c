"""Bytes of the stored weights in a format, LoRA adapter sizes, and which linears LoRA touches."""

from __future__ import annotations

import math
from collections.abc import Iterable

from gputui.fit.transformer.formats import WeightFormat
from gputui.fit.transformer.layout import PACKED_QKV, Block, Layout, Linear

UNQUANTIZED_ROLES = frozenset({"router", "shared_expert_gate"})

# PEFT module names (per architecture) to the roles in layout.py
TARGET_ALIASES = {
    "q_proj": "q", "query": "q", "q_lin": "q",
    "k_proj": "k", "key": "k", "k_lin": "k",
    "v_proj": "v", "value": "v", "v_lin": "v",
    "o_proj": "o", "out_proj": "o", "out_lin": "o", "dense": "o",
    "c_attn": "qkv", "query_key_value": "qkv", "qkv_proj": "qkv", "w_pack": "qkv",
    "gate_proj": "gate", "w1": "gate", "up_proj": "up", "w3": "up", "down_proj": "down",
    "w2": "down", "gate_up_proj": "gate_up",
    "c_fc": "fc_in", "fc1": "fc_in", "lin1": "fc_in", "dense_h_to_4h": "fc_in",
    "intermediate.dense": "fc_in", "mlp.c_proj": "fc_out", "fc2": "fc_out", "lin2": "fc_out",
    "dense_4h_to_h": "fc_out", "output.dense": "fc_out",
    "q_a_proj": "q_a", "q_b_proj": "q_b", "kv_a_proj_with_mqa": "kv_a", "kv_b_proj": "kv_b",
}  # fmt: skip
ROLES = frozenset(
    {
        "q",
        "k",
        "v",
        "o",
        "qkv",
        "gate",
        "up",
        "down",
        "gate_up",
        "fc_in",
        "fc_out",
        "q_a",
        "q_b",
        "kv_a",
        "kv_b",
    }
)


def normalize_targets(names: Iterable[str]) -> tuple[str, ...]:
    """PEFT-style names ("q_proj", "c_attn", "all-linear") to roles; ValueError on an unknown one."""
    out: list[str] = []
    for raw in names:
        name = raw.strip().lower()
        if not name:
            continue
        if name in ("all-linear", "all_linear", "all"):
            return ("all-linear",)
        role = TARGET_ALIASES.get(name, name)
        if role not in ROLES:
            raise ValueError(
                f"unknown LoRA target {raw!r} (use q, k, v, o, gate, up, down, fc_in, fc_out, "
                "their PEFT names such as q_proj, or all-linear)"
            )
        if role not in out:
            out.append(role)
    if not out:
        raise ValueError("no LoRA target given")
    return tuple(out)


def _base_role(role: str) -> str:
    for prefix in ("expert_", "shared_", "cross_"):
        if role.startswith(prefix):
            return role[len(prefix) :]
    return role


def targeted(lin: Linear, targets: tuple[str, ...]) -> bool:
    if lin.role in UNQUANTIZED_ROLES or lin.role in ("project_in", "project_out", "pooler"):
        return False
    if targets == ("all-linear",):
        return True
    role = _base_role(lin.role)
    if role == PACKED_QKV:
        role = "qkv"
    if role in targets:
        return True
    if role == "qkv":
        return any(t in targets for t in ("q", "k", "v"))
    if role == "gate_up":
        return any(t in targets for t in ("gate", "up"))
    return False


def lora_params_block(block: Block, targets: tuple[str, ...], rank: int) -> int:
    return sum(
        rank * (lin.in_features + lin.out_features) * lin.copies
        for lin in block.linears
        if targeted(lin, targets)
    )


def lora_params(lay: Layout, targets: tuple[str, ...], rank: int) -> int:
    return sum(lora_params_block(b, targets, rank) * b.count for b in lay.blocks)


def linear_bytes(lin: Linear, fmt: WeightFormat, tp: int = 1) -> float:
    dense = fmt.dense_bytes
    bias = lin.bias_params * dense
    if fmt.quantized and lin.role not in UNQUANTIZED_ROLES:
        w = lin.weight_params * fmt.bits / 8
        w += lin.out_features * lin.copies * fmt.per_row_bytes
        w += lin.in_features * lin.copies * fmt.per_input_bytes
    else:
        w = lin.weight_params * dense
    return (w + bias) / tp


def block_weight_bytes(block: Block, fmt: WeightFormat, tp: int = 1) -> float:
    return sum(linear_bytes(lin, fmt, tp) for lin in block.linears) + block.other * fmt.dense_bytes


def weight_bytes(
    lay: Layout,
    fmt: WeightFormat,
    *,
    tp: int = 1,
    layers: int | None = None,
    embedding: bool = True,
    head: bool = True,
) -> int:
    """Stored bytes on one GPU holding `layers` of the blocks (default all) and the ends asked for."""
    total = 0.0
    remaining = lay.layers if layers is None else layers
    # the heaviest blocks first: a pipeline stage is sized for its worst case
    for b in sorted(lay.blocks, key=lambda b: -block_weight_bytes(b, fmt)):
        n = min(b.count, remaining)
        total += n * block_weight_bytes(b, fmt, tp)
        remaining -= n
    if embedding:
        total += lay.embedding * fmt.dense_bytes / tp
        total += lay.vision * fmt.dense_bytes  # the vision tower: kept whole, unquantized
    if head:
        total += lay.lm_head * fmt.dense_bytes / tp
        total += lay.final_norm * fmt.dense_bytes
        total += sum(linear_bytes(lin, fmt, tp) for lin in lay.head_linears)
    return math.ceil(total)


def largest_linear_elements(lay: Layout) -> int:
    return lay.largest_linear()
