"""The layers keras.applications defines outside keras.layers: ConvNeXt's LayerScale and
StochasticDepth, InceptionResNetV2's CustomScaleLayer.

Each is modelled by what its `call` does in Keras (keras/src/applications/convnext.py,
inception_resnet_v2.py) and what PyTorch's autograd keeps for those operations.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gputui.fit.graph.layer_args import Args, LayerArgError
from gputui.fit.graph.layers.common import Shape, prod
from gputui.fit.graph.layers.merge import same_shapes
from gputui.fit.graph.stats import LayerStats, Saved


def layer_scale(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    """`x * gamma`, gamma a trainable vector of `projection_dim` over the last axis."""
    a = Args(raw, {"init_values", "projection_dim"}, frozenset())
    if "projection_dim" not in raw:
        raise LayerArgError("projection_dim", "is required")
    dim = a.integer("projection_dim")
    a.number("init_values", 1e-6, -math.inf, math.inf)
    if not shape or shape[-1] != dim:
        raise LayerArgError(
            "projection_dim",
            f"is {dim}, but the input's last axis is {shape[-1] if shape else 'absent'} "
            f"(input {shape})",
        )
    el = prod(shape)
    # mul(x, gamma): gamma's gradient needs x, so x is kept while gamma trains; that
    # gradient is a full-size grad * x summed down to the vector
    return LayerStats(
        0,
        "",
        shape,
        dim,
        0,
        el,
        saves_input_if_trainable=True,
        backward_transient=el,
        param_tensors=(dim,),
    )


def stochastic_depth(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    """Training: `(x / keep) * floor(keep + uniform((batch, 1, ...)))`, a residual branch
    dropped per sample; at rate 0 (and outside training) it returns `x`."""
    a = Args(raw, {"drop_path_rate"}, frozenset())
    if "drop_path_rate" not in raw:
        raise LayerArgError("drop_path_rate", "is required")
    rate = a.number("drop_path_rate", 0.0, 0.0, 1.0)
    if rate >= 1.0:
        raise LayerArgError("drop_path_rate", "must be below 1 (keep = 1 - rate divides)")
    if rate == 0.0:
        return LayerStats(0, "", shape, 0, 0, 0, output_is_view=True)
    el = prod(shape)
    # x / keep is made and lives until the product; the product keeps the one-value-
    # per-sample mask; backward makes the product's gradient, then the division's
    return LayerStats(
        0,
        "",
        shape,
        0,
        0,
        2 * el,
        internal_saved=(Saved(1),),
        forward_transient=el,
        backward_transient=el,
    )


def custom_scale(raw: Mapping[str, Any], shapes: tuple[Shape, ...]) -> LayerStats:
    """`inputs[0] + inputs[1] * scale` (a residual added at a fixed scale), no weights."""
    a = Args(raw, {"scale"}, frozenset())
    if "scale" not in raw:
        raise LayerArgError("scale", "is required")
    a.number("scale", 1.0, -math.inf, math.inf)
    if len(shapes) != 2:
        raise LayerArgError("inputs", f"CustomScaleLayer takes exactly 2 inputs, got {len(shapes)}")
    shape = same_shapes(shapes, "CustomScaleLayer")
    el = prod(shape)
    # the scaled residual lives until the sum; a product by a number keeps nothing;
    # the shortcut's gradient is the output's, the residual's a scaled copy
    return LayerStats(0, "", shape, 0, 0, 2 * el, forward_transient=el)
