"""Regularisation layers: dropout's masks (plain, spatial, Gaussian), additive noise and the
activity penalty."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gputui.fit.graph.layer_args import Args, LayerArgError
from gputui.fit.graph.layers.common import SPATIAL, Shape, SingleFn, check_rank, prod
from gputui.fit.graph.stats import LayerStats, Saved


def dropout(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"rate", "noise_shape"}, frozenset())
    if "rate" not in raw:
        raise LayerArgError("rate", "is required")
    rate = a.number("rate", 0.0, 0.0, 1.0)
    mask = noise_elements(a, shape)
    if rate == 0.0:
        return LayerStats(0, "", shape, 0, 0, 0, output_is_view=True)
    el = prod(shape)
    if mask is not None:
        # Keras' seeded path: a broadcast bernoulli mask, then where(mask, x / keep, 0)
        return LayerStats(0, "", shape, 0, 0, el, internal_saved=(Saved(mask, "mask"),))
    return LayerStats(0, "", shape, 0, 0, el, internal_saved=(Saved(el, "mask"),))


def noise_elements(a: Args, shape: Shape) -> int | None:
    """Per-sample elements of a Dropout `noise_shape` (batch axis first, 1 = broadcast)."""
    if not a.has("noise_shape"):
        return None
    value = a.get("noise_shape")
    if (
        not isinstance(value, list)
        or len(value) != len(shape) + 1
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in value)
    ):
        raise LayerArgError(
            "noise_shape",
            f"must be a list of {len(shape) + 1} positive integers (batch axis first) "
            f"for the input {shape}, got {value!r}",
        )
    for d, n in zip(value[1:], shape, strict=True):
        if d not in (1, n):
            raise LayerArgError(
                "noise_shape",
                f"{value} does not broadcast to the input {shape} (use 1 or the size)",
            )
    return prod(tuple(value[1:]))


def spatial_dropout(rank: int) -> SingleFn:
    def analyse(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
        a = Args(raw, {"rate", "data_format"}, frozenset())
        a.data_format()
        check_rank(shape, rank + 1, SPATIAL[rank])
        if "rate" not in raw:
            raise LayerArgError("rate", "is required")
        rate = a.number("rate", 0.0, 0.0, 1.0)
        if rate == 0.0:
            return LayerStats(0, "", shape, 0, 0, 0, output_is_view=True)
        # one mask value per (sample, channel), broadcast: where(mask, x / keep, 0)
        return LayerStats(
            0, "", shape, 0, 0, prod(shape), internal_saved=(Saved(shape[-1], "mask"),)
        )

    return analyse


def gaussian_noise(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"stddev"}, frozenset())
    if "stddev" not in raw:
        raise LayerArgError("stddev", "is required")
    a.number("stddev", 0.0, 0.0, math.inf)
    el = prod(shape)
    # x + noise: the noise exists while the sum is made; an addition keeps nothing
    return LayerStats(0, "", shape, 0, 0, el, forward_transient=el)


def gaussian_dropout(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"rate"}, frozenset())
    if "rate" not in raw:
        raise LayerArgError("rate", "is required")
    rate = a.number("rate", 0.0, 0.0, 1.0)
    el = prod(shape)
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
