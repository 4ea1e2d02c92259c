"""Keras preprocessing layers that run inside the model: resizing, rescaling, a fixed or
adapted normalization, centre cropping. None trains; what they keep is what their ops keep."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gputui.fit.graph.layer_args import Args, LayerArgError
from gputui.fit.graph.layers.common import SPATIAL, Shape, check_rank, keras_axis, prod
from gputui.fit.graph.stats import LayerStats

_INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "lanczos3", "lanczos5", "area")


def resizing(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(
        raw,
        {"height", "width", "interpolation", "crop_to_aspect_ratio", "pad_to_aspect_ratio"}
        | {"fill_mode", "fill_value", "data_format", "antialias"},
        frozenset(),
    )
    a.data_format()
    check_rank(shape, 3, SPATIAL[2])
    h, w = a.integer("height"), a.integer("width")
    a.choice("interpolation", "bilinear", _INTERPOLATIONS)
    for name in ("crop_to_aspect_ratio", "pad_to_aspect_ratio", "antialias"):
        a.flag(name, False)
    a.choice("fill_mode", "constant", ("constant",))
    a.number("fill_value", 0.0, -math.inf, math.inf)
    out = (h, w, shape[-1])
    # interpolate keeps only sizes; the channels-last input is made contiguous first
    return LayerStats(0, "", out, 0, 0, 8 * prod(out), forward_transient=prod(shape))


def rescaling(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"scale", "offset"}, frozenset())
    if "scale" not in raw:
        raise LayerArgError("scale", "is required")
    a.number("scale", 1.0, -math.inf, math.inf)
    a.number("offset", 0.0, -math.inf, math.inf)
    el = prod(shape)
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
    el = prod(shape)
    kept = prod(tuple(shape[x] for x in axes))
    # without mean/variance: adapt() state as non-trainable weights (mean, variance, count)
    weights = 0 if given[0] else 2 * kept + 1
    return LayerStats(0, "", shape, 0, weights, 2 * el, forward_transient=el)


def center_crop(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"height", "width", "data_format"}, frozenset())
    a.data_format()
    check_rank(shape, 3, SPATIAL[2])
    h, w = a.integer("height"), a.integer("width")
    out = (h, w, shape[-1])
    if h <= shape[0] and w <= shape[1]:
        return LayerStats(0, "", out, 0, 0, 0, output_is_view=True)
    # a smaller input is resized up (Keras crops to the aspect ratio, then resizes)
    return LayerStats(0, "", out, 0, 0, 8 * prod(out), forward_transient=prod(shape))
