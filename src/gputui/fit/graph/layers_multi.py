"""Layers of a graph: merges, attention, einsum projections and learned positions.

Memory follows what Keras 3's torch backend runs and PyTorch's autograd keeps:
an addition or a concatenation keeps nothing and hands its gradient (or slices of
it) on; a product, a maximum or a dot keeps both operands. Attention keeps its
projections and, on the eager path, the B x heads x T x S probabilities (plus the
dropout mask and the dropped copy); the fused path (`sdpa`) keeps only the output
and per-row log-sum-exp statistics.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gputui.fit.graph.args import Args, LayerArgError
from gputui.fit.graph.layers import _prod, _with_lora, keras_axis, lora
from gputui.fit.graph.stats import LayerStats, Saved

Shape = tuple[int, ...]
MultiFn = Callable[[Mapping[str, Any], tuple[Shape, ...]], LayerStats]
ATTENTION_MODES = ("auto", "eager", "sdpa")


def _at_least(shapes: tuple[Shape, ...], n: int, what: str) -> None:
    if len(shapes) < n:
        raise LayerArgError("inputs", f"{what} needs at least {n} inputs, got {len(shapes)}")


def _same_shapes(shapes: tuple[Shape, ...], kind: str) -> Shape:
    """The merged shape: equal shapes, or sizes of 1 broadcast (a squeeze-excite's (1, 1, C))."""
    _at_least(shapes, 2, kind)
    first = shapes[0]
    out = list(first)
    for i, s in enumerate(shapes[1:], 1):
        if len(s) != len(first) or any(
            a != b and 1 not in (a, b) for a, b in zip(s, out, strict=True)
        ):
            raise LayerArgError(
                "inputs", f"shapes do not agree: input 0 is {first}, input {i} is {s}"
            )
        out = [max(a, b) for a, b in zip(out, s, strict=True)]
    return tuple(out)


def _elementwise(kind: str) -> MultiFn:
    def analyse(raw: Mapping[str, Any], shapes: tuple[Shape, ...]) -> LayerStats:
        Args(raw, set(), frozenset())
        shape = _same_shapes(shapes, kind)
        if kind == "Subtract" and len(shapes) != 2:
            raise LayerArgError("inputs", f"Subtract takes exactly 2 inputs, got {len(shapes)}")
        el = _prod(shape)
        n = len(shapes)
        # Keras folds the inputs pairwise: n - 2 intermediate results
        between = (n - 2) * el
        if kind == "Add":
            return LayerStats(
                0, "", shape, 0, 0, (n - 1) * el, grad_alias=True, forward_transient=between
            )
        if kind == "Average":
            # the sum, then a division by n: one new gradient buffer, handed to every input
            return LayerStats(
                0,
                "",
                shape,
                0,
                0,
                n * el,
                grad_alias=True,
                forward_transient=between + el,
                backward_transient=el,
            )
        if kind == "Subtract":
            # a - b: the gradient of b is a negated copy
            return LayerStats(0, "", shape, 0, 0, el)
        # Multiply, Maximum, Minimum keep both operands of every pairwise step; a
        # broadcast operand's gradient is made full size, then summed down
        broadcast = any(s != shape for s in shapes)
        return LayerStats(
            0,
            "",
            shape,
            0,
            0,
            (n - 1) * el,
            saves_input=True,
            internal_saved=(Saved(between),) if between else (),
            backward_transient=el if broadcast else 0,
        )

    return analyse


def concatenate(raw: Mapping[str, Any], shapes: tuple[Shape, ...]) -> LayerStats:
    a = Args(raw, {"axis"}, frozenset())
    _at_least(shapes, 2, "Concatenate")
    rank = len(shapes[0])
    axis = keras_axis(a.get("axis", -1), shapes[0])
    for i, s in enumerate(shapes):
        if len(s) != rank or any(
            x != y for j, (x, y) in enumerate(zip(s, shapes[0], strict=True)) if j != axis
        ):
            raise LayerArgError(
                "inputs",
                f"shapes do not agree except on axis {axis + 1}: input 0 is {shapes[0]}, "
                f"input {i} is {s}",
            )
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    # keeps nothing; the inputs' gradients are slices (views) of the output's
    return LayerStats(0, "", tuple(out), 0, 0, 0, grad_alias=True)


def dot(raw: Mapping[str, Any], shapes: tuple[Shape, ...]) -> LayerStats:
    a = Args(raw, {"axes", "normalize"}, frozenset())
    if len(shapes) != 2:
        raise LayerArgError("inputs", f"Dot takes exactly 2 inputs, got {len(shapes)}")
    x, y = shapes
    axes = a.get("axes")
    if axes is None:
        raise LayerArgError("axes", "is required")
    pair = axes if isinstance(axes, list) else [axes, axes]
    if len(pair) != 2:
        raise LayerArgError("axes", f"must be an axis or a pair of axes, got {axes!r}")
    ax, ay = keras_axis(pair[0], x, "axes"), keras_axis(pair[1], y, "axes")
    if x[ax] != y[ay]:
        raise LayerArgError("axes", f"sizes differ: {x} axis {ax + 1} vs {y} axis {ay + 1}")
    if len(x) > 2 or len(y) > 2:
        raise LayerArgError("inputs", "Dot is supported on inputs of rank 1 or 2 per sample")
    out = tuple(d for i, d in enumerate(x) if i != ax) + tuple(
        d for i, d in enumerate(y) if i != ay
    )
    normalize = a.flag("normalize", False)
    extra = (Saved(_prod(x) + _prod(y)),) if normalize else ()
    return LayerStats(
        0,
        "",
        out or (1,),
        0,
        0,
        2 * _prod(out or (1,)) * x[ax],
        saves_input=True,
        internal_saved=extra,
    )


# -------------------------------------------------------------- projections


def _einsum_shapes(
    equation: str, in_shape: Shape, out_shape: list[int | None]
) -> tuple[Shape, Shape]:
    """Keras EinsumDense: the output shape and the kernel shape for an equation."""
    try:
        lhs, out_spec = equation.replace(" ", "").split("->")
        in_spec, w_spec = lhs.split(",")
    except ValueError:
        raise LayerArgError("equation", f"must look like 'ab,bc->ac', got {equation!r}") from None
    if "." in equation:
        raise LayerArgError("equation", "ellipses are not supported; name every axis")
    if len(in_spec) != len(in_shape) + 1:
        raise LayerArgError(
            "equation", f"{in_spec!r} does not match the input (batch, *{in_shape})"
        )
    if len(out_shape) != len(out_spec) - 1:
        raise LayerArgError(
            "output_shape", f"{out_shape} must give the {len(out_spec) - 1} non-batch axes"
        )
    dims: dict[str, int] = dict(zip(in_spec[1:], in_shape, strict=True))
    full: list[int] = []
    for ch, d in zip(out_spec[1:], out_shape, strict=True):
        if d is None or d == -1:  # Keras' None (TOML has no null): the input's size
            if ch not in dims:
                raise LayerArgError("output_shape", f"axis {ch!r} needs a size")
            d = dims[ch]
        if ch in dims and dims[ch] != d:
            raise LayerArgError("output_shape", f"axis {ch!r} is {dims[ch]} in the input, not {d}")
        full.append(d)
    out_dims = dict(zip(out_spec[1:], full, strict=True))
    kernel = []
    for ch in w_spec:
        if ch in dims:
            kernel.append(dims[ch])
        elif ch in out_dims:
            kernel.append(out_dims[ch])
        else:
            raise LayerArgError("equation", f"kernel axis {ch!r} is in neither input nor output")
    return tuple(full), tuple(kernel)


def einsum_dense(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(
        raw,
        {"equation", "output_shape", "activation", "bias_axes", "lora_rank", "lora_alpha"},
        frozenset(),
    )
    equation = a.get("equation")
    if not isinstance(equation, str):
        raise LayerArgError("equation", "is required, e.g. 'ab,bc->ac'")
    out_arg = a.get("output_shape")
    if isinstance(out_arg, int) and not isinstance(out_arg, bool):
        out_arg = [out_arg]
    if not isinstance(out_arg, list) or not all(
        d is None or (isinstance(d, int) and not isinstance(d, bool) and (d > 0 or d == -1))
        for d in out_arg
    ):
        raise LayerArgError("output_shape", f"must be a list of positive integers, got {out_arg!r}")
    out, kernel = _einsum_shapes(equation, shape, out_arg)
    from gputui.fit.graph.layers import _activation, _fold_activation

    act = _activation(raw)
    bias_axes = a.get("bias_axes", "")
    if not isinstance(bias_axes, str):
        raise LayerArgError("bias_axes", f"must be a string of output axes, got {bias_axes!r}")
    out_spec = equation.replace(" ", "").split("->")[1][1:]
    for ch in bias_axes:
        if ch not in out_spec:
            raise LayerArgError("bias_axes", f"{ch!r} is not an output axis of {equation!r}")
    bias = _prod(tuple(out[out_spec.index(ch)] for ch in bias_axes)) if bias_axes else 0
    k = _prod(kernel)
    out_el = _prod(out)
    contracted = max(k // max(_prod(tuple(d for d in out if d in kernel)), 1), 1)
    stats = LayerStats(
        0,
        "",
        out,
        k + bias,
        0,
        2 * out_el * contracted,
        saves_input_if_trainable=True,
        param_tensors=(k, bias) if bias else (k,),
        matmul_params=k + bias,
        **_fold_activation(act, out_el),
    )
    low = lora(a, k // kernel[-1], kernel[-1])
    return _with_lora(stats, low[0], k // kernel[-1], kernel[-1], False) if low else stats


# ------------------------------------------------------------------ attention


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
        inference_transient=(2 * maps if mode == "eager" else 0) + q_el + k_el + v_el + o_el,
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


def position_embedding(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"sequence_length", "initializer"}, frozenset())
    length = a.integer("sequence_length")
    if len(shape) < 2:
        raise LayerArgError("input shape", f"needs (steps, features) per sample, got {shape}")
    if shape[-2] > length:
        raise LayerArgError(
            "sequence_length", f"{length} is shorter than the input's {shape[-2]} steps"
        )
    params = length * shape[-1]
    # the table broadcast to the input's shape: a view of the weights, no gradient to x
    return LayerStats(
        0,
        "",
        shape,
        params,
        0,
        0,
        output_is_view=True,
        no_input_grad=True,
        param_tensors=(params,),
    )


def token_and_position_embedding(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(
        raw,
        {"vocabulary_size", "sequence_length", "embedding_dim", "tie_weights", "mask_zero"}
        | {"embeddings_initializer"},
        frozenset(),
    )
    vocab = a.integer("vocabulary_size")
    length = a.integer("sequence_length")
    dim = a.integer("embedding_dim")
    a.flag("tie_weights", True)
    a.flag("mask_zero", False)
    if len(shape) != 1:
        raise LayerArgError("input shape", f"needs (steps,) token ids per sample, got {shape}")
    if shape[0] > length:
        raise LayerArgError(
            "sequence_length", f"{length} is shorter than the input's {shape[0]} steps"
        )
    out = (shape[0], dim)
    el = _prod(out)
    # token lookup (a new tensor), plus the broadcast positions: the sum is the output
    return LayerStats(
        0,
        "",
        out,
        (vocab + length) * dim,
        0,
        el,
        forward_transient=el,
        no_input_grad=True,
        param_tensors=(vocab * dim, length * dim),
    )


MULTI: dict[str, MultiFn] = {
    "Add": _elementwise("Add"),
    "Subtract": _elementwise("Subtract"),
    "Multiply": _elementwise("Multiply"),
    "Average": _elementwise("Average"),
    "Maximum": _elementwise("Maximum"),
    "Minimum": _elementwise("Minimum"),
    "Concatenate": concatenate,
    "Dot": dot,
    "Attention": lambda r, s: attention(r, s, additive=False),
    "AdditiveAttention": lambda r, s: attention(r, s, additive=True),
}
SINGLE_MORE = {
    "EinsumDense": einsum_dense,
    "PositionEmbedding": position_embedding,
    "TokenAndPositionEmbedding": token_and_position_embedding,
}
