"""Keras 3 shape, normalization, noise and wrapper layers beyond the original set.

Same contract as layers.py: Keras' shapes and parameter counts (`count_params()`),
and what PyTorch's autograd keeps when Keras' torch backend runs the layer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from gputui.fit.graph.args import Args, LayerArgError
from gputui.fit.graph.layers import (
    _SPATIAL,
    _activation_layer,
    _conv,
    _global_pool,
    _pool,
    _prod,
    _rank,
    keras_axis,
)
from gputui.fit.graph.stats import LayerStats, Saved

Shape = tuple[int, ...]
SingleFn = Callable[[Mapping[str, Any], Shape], LayerStats]


def _pairs(value: Any, rank: int, field: str) -> list[tuple[int, int]]:
    """Keras' cropping/padding spec: an int, one int per axis, or (before, after) per axis."""
    if isinstance(value, int) and not isinstance(value, bool):
        items: list[Any] = [value] * rank
    elif isinstance(value, list) and len(value) == rank:
        items = value
    elif rank == 1 and isinstance(value, list) and len(value) == 2:
        items = [value]
    else:
        raise LayerArgError(field, f"must be an integer or a list of {rank}, got {value!r}")
    out = []
    for item in items:
        pair = [item, item] if isinstance(item, int) and not isinstance(item, bool) else item
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in pair)
        ):
            raise LayerArgError(field, f"must hold non-negative integers, got {value!r}")
        out.append((pair[0], pair[1]))
    return out


def _cropping(rank: int) -> SingleFn:
    def analyse(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
        a = Args(raw, {"cropping", "data_format"}, frozenset())
        a.data_format()
        _rank(shape, rank + 1, _SPATIAL[rank])
        crops = _pairs(a.get("cropping", 1 if rank == 1 else 0), rank, "cropping")
        spatial = tuple(n - lo - hi for n, (lo, hi) in zip(shape[:-1], crops, strict=True))
        if any(n <= 0 for n in spatial):
            raise LayerArgError("cropping", f"{crops} crops the input {shape} to nothing")
        # a slice: a view of the input, its gradient a zero-padded copy
        return LayerStats(0, "", (*spatial, shape[-1]), 0, 0, 0, output_is_view=True)

    return analyse


def _zero_padding(rank: int) -> SingleFn:
    def analyse(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
        a = Args(raw, {"padding", "data_format"}, frozenset())
        a.data_format()
        _rank(shape, rank + 1, _SPATIAL[rank])
        pads = _pairs(a.get("padding", 1), rank, "padding")
        spatial = tuple(n + lo + hi for n, (lo, hi) in zip(shape[:-1], pads, strict=True))
        return LayerStats(0, "", (*spatial, shape[-1]), 0, 0, 0)

    return analyse


def up_sampling1d(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"size"}, frozenset())
    _rank(shape, 2, "steps, features")
    size = a.integer("size", 2)
    out = (shape[0] * size, shape[1])
    return LayerStats(0, "", out, 0, 0, _prod(out))


def up_sampling3d(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"size", "data_format"}, frozenset())
    a.data_format()
    _rank(shape, 4, _SPATIAL[3])
    size = a.ints("size", 2, 3)
    out = (*(n * s for n, s in zip(shape[:-1], size, strict=True)), shape[-1])
    return LayerStats(0, "", out, 0, 0, _prod(out), forward_transient=_prod(out))


def repeat_vector(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"n"}, frozenset())
    _rank(shape, 1, "features")
    n = a.integer("n")
    return LayerStats(0, "", (n, shape[0]), 0, 0, 0)


def permute(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"dims"}, frozenset())
    dims = a.get("dims")
    if (
        not isinstance(dims, list)
        or sorted(d for d in dims if isinstance(d, int)) != list(range(1, len(shape) + 1))
        or any(isinstance(d, bool) for d in dims)
    ):
        raise LayerArgError(
            "dims", f"must be a permutation of 1..{len(shape)} (the input {shape}), got {dims!r}"
        )
    return LayerStats(0, "", tuple(shape[d - 1] for d in dims), 0, 0, 0, output_is_view=True)


_INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "lanczos3", "lanczos5", "area")


def resizing(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(
        raw,
        {"height", "width", "interpolation", "crop_to_aspect_ratio", "pad_to_aspect_ratio"}
        | {"fill_mode", "fill_value", "data_format", "antialias"},
        frozenset(),
    )
    a.data_format()
    _rank(shape, 3, _SPATIAL[2])
    h, w = a.integer("height"), a.integer("width")
    a.choice("interpolation", "bilinear", _INTERPOLATIONS)
    for name in ("crop_to_aspect_ratio", "pad_to_aspect_ratio", "antialias"):
        a.flag(name, False)
    a.choice("fill_mode", "constant", ("constant",))
    a.number("fill_value", 0.0, -math.inf, math.inf)
    out = (h, w, shape[-1])
    # interpolate keeps only sizes; the channels-last input is made contiguous first
    return LayerStats(0, "", out, 0, 0, 8 * _prod(out), forward_transient=_prod(shape))


def rescaling(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"scale", "offset"}, frozenset())
    if "scale" not in raw:
        raise LayerArgError("scale", "is required")
    a.number("scale", 1.0, -math.inf, math.inf)
    a.number("offset", 0.0, -math.inf, math.inf)
    el = _prod(shape)
    # x * scale + offset: two new tensors, nothing kept (scalars)
    return LayerStats(0, "", shape, 0, 0, 2 * el, forward_transient=el)


def normalization(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"axis", "mean", "variance", "invert"}, frozenset())
    a.flag("invert", False)
    axis = a.get("axis", -1)
    listed = axis if isinstance(axis, list) else [axis]
    axes = [keras_axis(x, shape) for x in listed]
    given = a.has("mean"), a.has("variance")
    if given[0] != given[1]:
        raise LayerArgError("mean" if not given[0] else "variance", "mean and variance go together")
    for name in ("mean", "variance"):
        value = a.get(name)
        items = value if isinstance(value, list) else [value]
        if a.has(name) and not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in items
        ):
            raise LayerArgError(name, f"must be a number or a list of numbers, got {value!r}")
        if name == "variance" and a.has(name) and any(v < 0 for v in items):
            raise LayerArgError(name, "must not be negative")
    el = _prod(shape)
    kept = _prod(tuple(shape[x] for x in axes))
    # without mean/variance: adapt() state as non-trainable weights (mean, variance, count)
    weights = 0 if given[0] else 2 * kept + 1
    return LayerStats(0, "", shape, 0, weights, 2 * el, forward_transient=el)


def center_crop(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"height", "width", "data_format"}, frozenset())
    a.data_format()
    _rank(shape, 3, _SPATIAL[2])
    h, w = a.integer("height"), a.integer("width")
    out = (h, w, shape[-1])
    if h <= shape[0] and w <= shape[1]:
        return LayerStats(0, "", out, 0, 0, 0, output_is_view=True)
    # a smaller input is resized up (Keras crops to the aspect ratio, then resizes)
    return LayerStats(0, "", out, 0, 0, 8 * _prod(out), forward_transient=_prod(shape))


_NORM_COSMETIC = frozenset(
    {"beta_initializer", "gamma_initializer", "beta_regularizer", "gamma_regularizer"}
    | {"beta_constraint", "gamma_constraint"}
)


def group_normalization(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"groups", "axis", "epsilon", "center", "scale"}, _NORM_COSMETIC)
    groups = a.integer("groups", 32)
    axis = keras_axis(a.get("axis", -1), shape)
    a.number("epsilon", 1e-3, 1e-300, math.inf)
    channels = shape[axis]
    if channels % groups:
        raise LayerArgError(
            "groups", f"{groups} must divide the {channels} channels of the input {shape}"
        )
    count = int(a.flag("center", True)) + int(a.flag("scale", True))
    el = _prod(shape)
    # Keras' own ops: moments (x^2 made and reduced), then x * inv + res: x is kept,
    # plus per-(sample, group) statistics
    return LayerStats(
        0,
        "",
        shape,
        count * channels,
        0,
        8 * el,
        saves_input=True,
        internal_saved=(Saved(2 * channels, "stat"),),
        forward_transient=el,
        param_tensors=tuple(channels for _ in range(count)),
        autocast_fp32=True,
    )


def unit_normalization(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"axis"}, frozenset())
    axis = a.get("axis", -1)
    listed = axis if isinstance(axis, list) else [axis]
    axes = [keras_axis(x, shape) for x in listed]
    el = _prod(shape)
    positions = el // _prod(tuple(shape[x] for x in axes))
    # x / max(||x||, eps): the division keeps x and the norm, the norm keeps x
    return LayerStats(
        0,
        "",
        shape,
        0,
        0,
        3 * el,
        saves_input=True,
        internal_saved=(Saved(2 * positions),),
        forward_transient=el,
    )


def _spatial_dropout(rank: int) -> SingleFn:
    def analyse(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
        a = Args(raw, {"rate", "data_format"}, frozenset())
        a.data_format()
        _rank(shape, rank + 1, _SPATIAL[rank])
        if "rate" not in raw:
            raise LayerArgError("rate", "is required")
        rate = a.number("rate", 0.0, 0.0, 1.0)
        if rate == 0.0:
            return LayerStats(0, "", shape, 0, 0, 0, output_is_view=True)
        # one mask value per (sample, channel), broadcast: where(mask, x / keep, 0)
        return LayerStats(
            0, "", shape, 0, 0, _prod(shape), internal_saved=(Saved(shape[-1], "mask"),)
        )

    return analyse


def gaussian_noise(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"stddev"}, frozenset())
    if "stddev" not in raw:
        raise LayerArgError("stddev", "is required")
    a.number("stddev", 0.0, 0.0, math.inf)
    el = _prod(shape)
    # x + noise: the noise exists while the sum is made; an addition keeps nothing
    return LayerStats(0, "", shape, 0, 0, el, forward_transient=el)


def gaussian_dropout(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"rate"}, frozenset())
    if "rate" not in raw:
        raise LayerArgError("rate", "is required")
    rate = a.number("rate", 0.0, 0.0, 1.0)
    el = _prod(shape)
    if rate == 0.0:
        return LayerStats(0, "", shape, 0, 0, 0, output_is_view=True)
    # x * noise: the product keeps the noise (x only if the noise needed a gradient)
    return LayerStats(0, "", shape, 0, 0, el, internal_saved=(Saved(el),))


def activity_regularization(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"l1", "l2"}, frozenset())
    a.number("l1", 0.0, 0.0, math.inf)
    a.number("l2", 0.0, 0.0, math.inf)
    # the penalty is a loss term made from the output: nothing activation-sized at
    # memory level beyond the tensor itself, which it passes on unchanged
    return LayerStats(0, "", shape, 0, 0, 0, output_is_view=True)


def softmax(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"axis"}, frozenset())
    axis = a.get("axis", -1)
    for x in axis if isinstance(axis, list) else [axis]:
        keras_axis(x, shape)
    return _activation_layer("softmax", shape)


def elu(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"alpha"}, frozenset())
    a.number("alpha", 1.0, 0.0, math.inf)
    return _activation_layer("elu", shape)


def prelu(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(
        raw,
        {"shared_axes"},
        frozenset({"alpha_initializer", "alpha_regularizer"}) | {"alpha_constraint"},
    )
    shared = a.get("shared_axes", [])
    if isinstance(shared, int) and not isinstance(shared, bool):
        shared = [shared]
    if not isinstance(shared, list):
        raise LayerArgError("shared_axes", f"must be a list of axes, got {shared!r}")
    axes = {keras_axis(x, shape, "shared_axes") for x in shared}
    alpha = _prod(tuple(1 if i in axes else n for i, n in enumerate(shape)))
    el = _prod(shape)
    # Keras: relu(x) - alpha * relu(-x): relu keeps its output twice over, the
    # product keeps alpha's operand relu(-x)
    return LayerStats(
        0,
        "",
        shape,
        alpha,
        0,
        4 * el,
        internal_saved=(Saved(2 * el),),
        forward_transient=2 * el,
        param_tensors=(alpha,),
    )


def time_distributed(
    analyse: Callable[[int, Mapping[str, Any], tuple[Shape, ...]], LayerStats],
) -> SingleFn:
    """TimeDistributed(layer): the inner layer on (batch * steps, *rest), as Keras reshapes."""

    def wrapper(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
        a = Args(raw, {"layer"}, frozenset())
        inner = a.get("layer")
        if not isinstance(inner, dict):
            raise LayerArgError("layer", 'must be an inline table, e.g. { type = "Dense", ... }')
        if len(shape) < 2:
            raise LayerArgError("input shape", f"needs (steps, ...) per sample, got {shape}")
        steps = shape[0]
        try:
            stats = analyse(0, inner, (shape[1:],))
        except LayerArgError as exc:
            raise LayerArgError(f"layer.{exc.field}", exc.reason) from None
        return _scaled(stats, steps)

    return wrapper


def _scaled(s: LayerStats, steps: int) -> LayerStats:
    return replace(
        s,
        output_shape=(steps, *s.output_shape),
        flops=s.flops * steps,
        internal_saved=tuple(Saved(x.elements * steps, x.kind) for x in s.internal_saved),
        forward_transient=s.forward_transient * steps,
        backward_transient=s.backward_transient * steps,
        inference_transient=(
            None if s.inference_transient is None else s.inference_transient * steps
        ),
        extra_outputs=tuple((steps, *e) for e in s.extra_outputs),
    )


SINGLE: dict[str, SingleFn] = {
    "Conv3D": lambda r, s: _conv(r, s, 3),
    "MaxPooling3D": lambda r, s: _pool(r, s, 3, "max"),
    "AveragePooling3D": lambda r, s: _pool(r, s, 3, "avg"),
    "GlobalAveragePooling3D": lambda r, s: _global_pool(r, s, 3, "avg"),
    "GlobalMaxPooling3D": lambda r, s: _global_pool(r, s, 3, "max"),
    "Cropping1D": _cropping(1),
    "Cropping2D": _cropping(2),
    "Cropping3D": _cropping(3),
    "ZeroPadding1D": _zero_padding(1),
    "ZeroPadding3D": _zero_padding(3),
    "UpSampling1D": up_sampling1d,
    "UpSampling3D": up_sampling3d,
    "RepeatVector": repeat_vector,
    "Permute": permute,
    "Resizing": resizing,
    "Rescaling": rescaling,
    "Normalization": normalization,
    "CenterCrop": center_crop,
    "GroupNormalization": group_normalization,
    "UnitNormalization": unit_normalization,
    "SpatialDropout1D": _spatial_dropout(1),
    "SpatialDropout2D": _spatial_dropout(2),
    "SpatialDropout3D": _spatial_dropout(3),
    "GaussianNoise": gaussian_noise,
    "GaussianDropout": gaussian_dropout,
    "ActivityRegularization": activity_regularization,
    "Softmax": softmax,
    "ELU": elu,
    "PReLU": prelu,
}
