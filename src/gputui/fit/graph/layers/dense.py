"""Dense and EinsumDense projections, and Keras 3's LoRA (`lora_rank`) on their kernels."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gputui.fit.graph.layer_args import Args, LayerArgError
from gputui.fit.graph.layers.activations import fold_activation, parse_activation
from gputui.fit.graph.layers.common import Shape, prod
from gputui.fit.graph.stats import LayerStats


def lora(a: Args, rows: int, cols: int) -> tuple[int, float] | None:
    """Keras 3's `lora_rank`: the kernel (rows x cols) frozen, a (rows x r) and b (r x cols) train."""
    if not a.has("lora_rank"):
        if a.has("lora_alpha"):
            raise LayerArgError("lora_alpha", "needs lora_rank")
        return None
    rank = a.integer("lora_rank")
    alpha = a.number("lora_alpha", float(rank), 1e-12, math.inf)
    return rank, alpha


def with_lora(stats: LayerStats, rank: int, rows: int, cols: int, table: bool) -> LayerStats:
    """LoRA as Keras computes it: every call rebuilds `kernel + (a @ b) * alpha / rank`.

    The kernel stops training; a and b train. The merged kernel is a new tensor at
    every call, and the matmul that uses it keeps it for backward (an embedding
    lookup keeps only the indices); making it needs the product and its scaled copy.
    """
    kernel = rows * cols
    low = rank * (rows + cols)
    others = stats.trainable_params - kernel  # the bias keeps training
    return replace(
        stats,
        trainable_params=others + low,
        non_trainable_params=stats.non_trainable_params + kernel,
        param_tensors=tuple(p for p in (rows * rank, rank * cols, others) if p),
        fixed_saved=0 if table else kernel,
        fixed_transient=2 * kernel,
        backward_param_transient=stats.backward_param_transient + kernel,
        # the input is kept because the merged kernel needs a gradient
        saves_input=not table,
        saves_input_if_trainable=False,
    )


def dense(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"units", "activation", "use_bias", "lora_rank", "lora_alpha"}, frozenset())
    units = a.integer("units")
    use_bias = a.flag("use_bias", True)
    act = parse_activation(raw)
    if not shape:
        raise LayerArgError("input shape", "Dense needs at least a 1-D input per sample")
    # Keras applies Dense to the last axis of a higher-rank input
    out = (*shape[:-1], units)
    kernel = shape[-1] * units
    bias = units if use_bias else 0
    out_el = prod(out)
    stats = LayerStats(
        index=0,
        type="",
        output_shape=out,
        trainable_params=kernel + bias,
        non_trainable_params=0,
        flops=2 * shape[-1] * out_el,
        saves_input_if_trainable=True,
        param_tensors=(kernel, bias) if bias else (kernel,),
        matmul_params=kernel + bias,
        **fold_activation(act, out_el),
    )
    low = lora(a, shape[-1], units)
    return with_lora(stats, low[0], shape[-1], units, False) if low else stats


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
    act = parse_activation(raw)
    bias_axes = a.get("bias_axes", "")
    if not isinstance(bias_axes, str):
        raise LayerArgError("bias_axes", f"must be a string of output axes, got {bias_axes!r}")
    out_spec = equation.replace(" ", "").split("->")[1][1:]
    for ch in bias_axes:
        if ch not in out_spec:
            raise LayerArgError("bias_axes", f"{ch!r} is not an output axis of {equation!r}")
    bias = prod(tuple(out[out_spec.index(ch)] for ch in bias_axes)) if bias_axes else 0
    k = prod(kernel)
    out_el = prod(out)
    contracted = max(k // max(prod(tuple(d for d in out if d in kernel)), 1), 1)
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
        **fold_activation(act, out_el),
    )
    low = lora(a, k // kernel[-1], kernel[-1])
    return with_lora(stats, low[0], k // kernel[-1], kernel[-1], False) if low else stats
