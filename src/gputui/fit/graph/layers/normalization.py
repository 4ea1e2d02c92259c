"""Normalisation layers (batch, layer, group, unit): their weights, and the input and
per-position statistics each keeps for backward."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gputui.fit.graph.layer_args import Args, LayerArgError
from gputui.fit.graph.layers.common import Shape, keras_axis, prod
from gputui.fit.graph.stats import LayerStats, Saved


def batch_normalization(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(
        raw,
        {"axis", "momentum", "epsilon", "center", "scale", "synchronized", "renorm"}
        | {"renorm_momentum", "renorm_clipping"},
        frozenset(
            {
                "beta_initializer",
                "gamma_initializer",
                "moving_mean_initializer",
                "moving_variance_initializer",
                "beta_regularizer",
                "gamma_regularizer",
                "beta_constraint",
                "gamma_constraint",
            }
        ),
    )
    axis = keras_axis(a.get("axis", -1), shape)
    a.number("momentum", 0.99, 0.0, 1.0 + 1e-12)
    a.number("epsilon", 1e-3, 1e-300, math.inf)
    a.flag("synchronized", False)
    if a.flag("renorm", False):
        raise LayerArgError("renorm", "true (batch renormalization) is not supported")
    a.number("renorm_momentum", 0.99, 0.0, 1.0 + 1e-12)
    if a.has("renorm_clipping") and not isinstance(a.get("renorm_clipping"), dict):
        raise LayerArgError("renorm_clipping", "must be a table of rmax/rmin/dmax")
    channels = shape[axis]
    trainable = channels * (int(a.flag("center", True)) + int(a.flag("scale", True)))
    el = prod(shape)
    return LayerStats(
        0,
        "",
        shape,
        trainable,
        2 * channels,
        5 * el,
        saves_input=True,
        param_tensors=tuple(channels for _ in range(trainable // channels)),
        backward_transient=0,
    )


def layer_normalization(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(
        raw,
        {"axis", "epsilon", "center", "scale", "rms_scaling"},
        frozenset({"beta_initializer", "gamma_initializer", "beta_regularizer"})
        | frozenset({"gamma_regularizer", "beta_constraint", "gamma_constraint"}),
    )
    axis = a.get("axis", -1)
    listed = axis if isinstance(axis, list) else [axis]
    if not listed:
        raise LayerArgError("axis", "must name at least one axis")
    axes = [keras_axis(x, shape) for x in listed]
    if len(set(axes)) != len(axes):
        dup = next(x for x in axes if axes.count(x) > 1)
        raise LayerArgError("axis", f"lists axis {dup + 1} twice ({axis!r})")
    a.number("epsilon", 1e-3, 1e-300, math.inf)
    normalized = prod(tuple(shape[x] for x in axes))
    center = a.flag("center", True) and not a.flag("rms_scaling", False)
    count = int(center) + int(a.flag("scale", True))
    el = prod(shape)
    positions = el // normalized
    return LayerStats(
        0,
        "",
        shape,
        count * normalized,
        0,
        8 * el,
        saves_input=True,
        internal_saved=(Saved(positions, "stat"), Saved(positions, "stat"), Saved(el, "amp_copy")),
        autocast_fp32=True,
        param_tensors=tuple(normalized for _ in range(count)),
    )


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
    el = prod(shape)
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
    el = prod(shape)
    positions = el // prod(tuple(shape[x] for x in axes))
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
