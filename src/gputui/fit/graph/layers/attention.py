"""Attention layers. MultiHeadAttention keeps its projections and, on the eager path, the
B x heads x T x S probabilities (plus the dropout mask and the dropped copy); the fused
path (`sdpa`) keeps only the output and per-row log-sum-exp statistics. Keras' dot and
additive Attention keep their score maps."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gputui.fit.graph.layer_args import Args, LayerArgError
from gputui.fit.graph.layers.common import Shape
from gputui.fit.graph.stats import LayerStats, Saved

ATTENTION_MODES = ("auto", "eager", "sdpa")


def _attention_mode(raw: Mapping[str, Any], default: str) -> str:
    mode = raw.get("attention", default)
    if mode not in ATTENTION_MODES:
        raise LayerArgError(
            "attention", f"must be one of {', '.join(ATTENTION_MODES)}, got {mode!r}"
        )
    return str(mode)


def multi_head_attention(
    raw: Mapping[str, Any], shapes: tuple[Shape, ...], attention: str = "auto"
) -> LayerStats:
    a = Args(
        raw,
        {"num_heads", "key_dim", "value_dim", "dropout", "use_bias", "output_shape"}
        | {"attention_axes", "use_causal_mask", "flash_attention", "use_gate"},
        frozenset(),
    )
    if len(shapes) not in (2, 3):
        raise LayerArgError(
            "inputs",
            f"MultiHeadAttention takes [query, value] or [query, value, key], got {len(shapes)}",
        )
    q_shape, v_shape = shapes[0], shapes[1]
    k_shape = shapes[2] if len(shapes) == 3 else v_shape
    for name, given in (("query", q_shape), ("value", v_shape), ("key", k_shape)):
        if len(given) != 2:
            raise LayerArgError(
                "inputs", f"the {name} must be (steps, features) per sample, got {given}"
            )
    if k_shape[0] != v_shape[0]:
        raise LayerArgError("inputs", f"key {k_shape} and value {v_shape} differ in length")
    heads = a.integer("num_heads")
    kd = a.integer("key_dim")
    vd = a.integer("value_dim", kd)
    rate = a.number("dropout", 0.0, 0.0, 1.0)
    use_bias = a.flag("use_bias", True)
    a.flag("use_causal_mask", False)
    if a.has("attention_axes") and a.get("attention_axes") not in (1, [1], -2, [-2]):
        raise LayerArgError("attention_axes", "only the default (the steps axis) is supported")
    if a.flag("use_gate", False):
        raise LayerArgError("use_gate", "true (gated attention) is not supported")
    flash = a.get("flash_attention")
    if flash is not None and not isinstance(flash, bool):
        raise LayerArgError("flash_attention", f"must be true or false, got {flash!r}")
    out_arg = a.get("output_shape")
    if out_arg is None:
        out_dim = q_shape[-1]
    elif isinstance(out_arg, int) and not isinstance(out_arg, bool) and out_arg > 0:
        out_dim = out_arg
    elif isinstance(out_arg, list) and len(out_arg) == 1 and isinstance(out_arg[0], int):
        out_dim = out_arg[0]
    else:
        raise LayerArgError("output_shape", f"must be a positive integer, got {out_arg!r}")
    t, s = q_shape[0], v_shape[0]
    b = 1 if use_bias else 0
    params = (
        q_shape[-1] * heads * kd
        + b * heads * kd
        + k_shape[-1] * heads * kd
        + b * heads * kd
        + v_shape[-1] * heads * vd
        + b * heads * vd
        + heads * vd * out_dim
        + b * out_dim
    )
    tensors = tuple(
        p
        for p in (
            q_shape[-1] * heads * kd,
            b * heads * kd,
            k_shape[-1] * heads * kd,
            b * heads * kd,
            v_shape[-1] * heads * vd,
            b * heads * vd,
            heads * vd * out_dim,
            b * out_dim,
        )
        if p
    )
    mode = _attention_mode(raw, attention)
    if flash is True:
        mode = "sdpa"
    if mode == "auto":
        # Keras 3 calls ops.dot_product_attention (the fused kernel) only without dropout
        mode = "eager" if rate > 0 else "sdpa"
    q_el, k_el, v_el = t * heads * kd, s * heads * kd, s * heads * vd
    o_el = t * heads * vd
    maps = heads * t * s
    flops = 2 * (q_el * q_shape[-1] + k_el * k_shape[-1] + v_el * v_shape[-1])
    flops += 2 * maps * (kd + vd) + 2 * o_el * out_dim
    qkv = q_el + k_el + v_el
    if mode == "eager":
        # projections' outputs (the scaled query and the key/value copies einsum makes
        # for its batched matmuls), the probabilities softmax keeps, the dropout mask
        # and dropped copy the value matmul keeps, and the merged heads the output
        # projection keeps
        saved = [Saved(qkv), Saved(maps), Saved(o_el)]
        drop = 2 * maps if rate > 0 else 0
        if rate > 0:
            saved += [Saved(maps, "mask"), Saved(maps)]
        # while it runs: the raw scores (until softmax has run), the projections' own
        # outputs (the call still holds them next to einsum's copies), the scaled
        # query, and the heads before they are merged
        transient = maps + qkv + q_el + o_el
        everything = qkv + maps + o_el + drop
        # backward, op by op: output projection; probs @ v (the merged heads' copy
        # is gone); dropout; softmax (v and the dropped copy are gone); q @ k^T (the
        # probabilities are gone); the q/k/v projections, making the inputs' gradients
        steps = [
            (everything, o_el, False),
            (everything - o_el, o_el + maps + v_el, False),
            (q_el + k_el + maps, 2 * maps + v_el, False),
            (q_el + k_el, maps + qkv, False),
            (0, qkv, True),
        ]
        if rate > 0:
            steps.insert(2, (everything - o_el - v_el - maps, 2 * maps + v_el, False))
    else:
        # fused: q, k, v, the output and fp32 log-sum-exp per query row are kept
        saved = [Saved(qkv), Saved(o_el), Saved(heads * t, "stat")]
        transient = q_el + o_el
        everything = qkv + o_el
        # output projection; the fused backward (dq, dk, dv at once); the projections
        steps = [(everything, o_el, False), (everything, o_el + qkv, False), (0, qkv, True)]
    # without autograd the output projection's einsum result is alive beside the
    # output its bias is added into (EinsumDense: einsum, then a new tensor + bias),
    # with q, k, v and the heads still held by the call
    pre_bias = t * out_dim if use_bias else 0
    return LayerStats(
        0,
        "",
        (t, out_dim),
        params,
        0,
        flops,
        saves_input_if_trainable=True,
        internal_saved=tuple(saved),
        forward_transient=transient,
        backward_steps=tuple(steps),
        inference_transient=(2 * maps if mode == "eager" else 0) + qkv + o_el + pre_bias,
        param_tensors=tensors,
        matmul_params=params,
        notes=(f"attention: {mode}",),
    )


def attention(
    raw: Mapping[str, Any], shapes: tuple[Shape, ...], additive: bool = False
) -> LayerStats:
    a = Args(raw, {"use_scale", "score_mode", "dropout", "use_causal_mask"}, frozenset())
    if len(shapes) not in (2, 3):
        raise LayerArgError(
            "inputs", f"takes [query, value] or [query, value, key], got {len(shapes)}"
        )
    q, v = shapes[0], shapes[1]
    k = shapes[2] if len(shapes) == 3 else v
    if len(q) != 2 or len(v) != 2 or len(k) != 2 or q[-1] != k[-1] or k[0] != v[0]:
        raise LayerArgError("inputs", f"shapes do not agree: query {q}, value {v}, key {k}")
    use_scale = a.flag("use_scale", additive)
    mode = a.choice("score_mode", "dot", ("dot", "concat"))
    rate = a.number("dropout", 0.0, 0.0, 1.0)
    a.flag("use_causal_mask", False)
    t, s, d = q[0], k[0], q[-1]
    maps = t * s
    if additive:
        params = d if use_scale else 0
        # tanh(q[:, :, None] + k[:, None]) is B x T x S x d and kept by tanh
        saved = [Saved(maps * d), Saved(maps)]
        transient = 2 * maps * d
    else:
        params = (1 if use_scale else 0) + (1 if mode == "concat" else 0)
        saved = [Saved(maps)]
        transient = maps
        if mode == "concat":
            saved.append(Saved(maps * d))
            transient += 2 * maps * d
    if rate > 0:
        saved += [Saved(maps, "mask"), Saved(maps)]
    return LayerStats(
        0,
        "",
        (t, v[-1]),
        params,
        0,
        2 * maps * (d + v[-1]),
        saves_input=True,
        internal_saved=tuple(saved),
        forward_transient=transient,
        backward_transient=2 * maps,
        param_tensors=(params,) if params else (),
    )
