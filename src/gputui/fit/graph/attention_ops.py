"""Multi-head attention's op adapter: its projections, score maps and softmax as the
roofline's `Op`s, eager (maps through DRAM) or fused (SDPA/flash).

Why a module of its own: attention is the one layer whose kernels depend on its
arguments and every input's shape rather than on its stats alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gputui.fit.core.precision import Precision
from gputui.fit.core.roofline import Op, OpClass, Pass, tensor_aligned
from gputui.fit.core.software import DEFAULT_SOFTWARE, Software
from gputui.fit.graph.ops import Kernels, LayerIO
from gputui.fit.graph.stats import LayerStats


def attention_ops(
    layer: LayerStats,
    raw: Mapping[str, Any],
    shapes: Sequence[Sequence[int]],
    io: LayerIO,
    p: Precision,
    batch: int,
    network: str = "",
    sw: Software = DEFAULT_SOFTWARE,
) -> list[Op]:
    """Multi-head attention as the kernels it runs: projections, the two batched
    matmuls over the (heads x queries x keys) maps, softmax and dropout on the maps.

    Eager attention writes the maps to DRAM and reads them back in every step
    (scores, softmax, dropout, AV, and their backward); a fused kernel (SDPA/flash)
    keeps them on chip and moves only q, k, v and the output. Which one runs is what
    the layer's stats say it keeps for backward (the maps are kept only when eager).
    """
    heads = int(raw.get("num_heads", 1))
    kd = int(raw.get("key_dim", 1))
    vd = int(raw.get("value_dim", kd) or kd)
    rate = float(raw.get("dropout", 0.0) or 0.0)
    q_shape = tuple(shapes[0])
    v_shape = tuple(shapes[1]) if len(shapes) > 1 else q_shape
    k_shape = tuple(shapes[2]) if len(shapes) > 2 else v_shape
    t, s_len = q_shape[0], v_shape[0]
    out_dim = layer.output_shape[-1]
    maps = heads * t * s_len * batch
    eager = any(x.elements == heads * t * s_len for x in layer.internal_saved)
    act = p.act_bytes
    wb = p.low_copy_bytes if p.amp else p.weight_bytes
    idx = io.index if io.index >= 0 else layer.index
    label = io.label or f"{layer.type} (layers[{idx}])"
    training = io.training and (io.needs_input_grad or io.trains)
    ops: list[Op] = []
    kernels = Kernels(ops, label, idx, network)

    def add(
        what: str,
        cls: OpClass,
        pas: Pass,
        flops: float,
        nbytes: float,
        tensor: bool,
        gemm: tuple[int, int] = (0, 0),
    ) -> None:
        kernels.add(what, cls, pas, flops, nbytes, tensor=tensor, gemm=gemm)

    projections = (
        ("query", q_shape[-1], heads * kd),
        ("key", k_shape[-1], heads * kd),
        ("value", v_shape[-1], heads * vd),
    )
    rows = {"query": t, "key": s_len, "value": s_len}
    for name, din, dout in (*projections, ("output", heads * vd, out_dim)):
        n = (t if name == "output" else rows[name]) * batch
        flops = 2 * n * din * dout
        tensor = tensor_aligned(p, din, dout)
        moved = n * din * act + din * dout * wb + n * dout * act
        add(f"{name} projection", "matmul", "forward", flops, moved, tensor, (n, dout))
        if training:
            add(
                f"{name} projection backward",
                "matmul",
                "backward_input",
                2 * flops,
                2 * moved + din * dout * p.grad_bytes,
                tensor,
            )
    qkv = batch * (t * heads * kd + s_len * heads * kd + s_len * heads * vd)
    o = batch * t * heads * vd
    core = 2 * maps * (kd + vd)
    tensor = tensor_aligned(p, kd, vd)
    if not eager:
        add("fused attention", "matmul", "forward", core, (qkv + o) * act, tensor)
        if training:  # FlashAttention's backward recomputes the maps: 2.5x the forward work
            add(
                "fused attention backward",
                "matmul",
                "backward_input",
                2.5 * core,
                2 * (qkv + o) * act,
                tensor,
            )
        return ops
    m_bytes = maps * act
    add("scores (q k^T)", "matmul", "forward", 2 * maps * kd, qkv * act * 2 / 3 + m_bytes, tensor)
    if sw.score_scale_mask:
        add("scores / sqrt(d)", "elementwise", "forward", maps, 2 * m_bytes, False)
        add("scores + mask", "elementwise", "forward", maps, 2 * m_bytes, False)
    add("softmax", "reduction", "forward", 5 * maps, 2 * m_bytes, False)
    if rate > 0:
        add("dropout", "elementwise", "forward", maps, 2 * m_bytes + maps, False)
    add("probs @ v", "matmul", "forward", 2 * maps * vd, m_bytes + qkv * act / 3 + o * act, tensor)
    if training:
        add(
            "probs @ v backward",
            "matmul",
            "backward_input",
            4 * maps * vd,
            2 * m_bytes + 2 * (qkv * act / 3 + o * act),
            tensor,
        )
        if rate > 0:
            add(
                "dropout backward", "elementwise", "backward_input", maps, 2 * m_bytes + maps, False
            )
        add("softmax backward", "elementwise", "backward_input", 3 * maps, 3 * m_bytes, False)
        if sw.score_scale_mask:  # the mask's add hands its gradient on unchanged
            add("scale backward", "elementwise", "backward_input", maps, 2 * m_bytes, False)
        add(
            "scores backward",
            "matmul",
            "backward_input",
            4 * maps * kd,
            m_bytes + 2 * qkv * act * 2 / 3,
            tensor,
        )
    return ops
