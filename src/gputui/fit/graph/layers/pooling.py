"""Pooling, windowed and global: max-pooling keeps its input and int64 indices, average
pooling only sizes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gputui.fit.graph.layer_args import Args, LayerArgError
from gputui.fit.graph.layers.common import SPATIAL, Shape, check_rank, prod
from gputui.fit.graph.stats import LayerStats, Saved


def pool_length(length: int, pool: int, stride: int, padding: str) -> int:
    if padding == "same":
        return (length - 1) // stride + 1
    return (length - pool) // stride + 1


def pool(raw: Mapping[str, Any], shape: Shape, rank: int, kind: str) -> LayerStats:
    a = Args(raw, {"pool_size", "strides", "padding", "data_format"}, frozenset())
    a.data_format()
    check_rank(shape, rank + 1, SPATIAL[rank])
    pool = a.ints("pool_size", 2, rank)
    strides = a.ints("strides", pool, rank) if a.has("strides") else pool
    padding = a.choice("padding", "valid", ("valid", "same"))
    spatial = tuple(
        pool_length(n, p, s, padding) for n, p, s in zip(shape[:-1], pool, strides, strict=True)
    )
    if any(n <= 0 for n in spatial):
        raise LayerArgError(
            "pool_size",
            f"{pool} with strides {strides} does not fit the input {shape}: "
            f"output size would be {spatial}",
        )
    out = (*spatial, shape[-1])
    out_el = prod(out)
    saved = (Saved(out_el, "index"),) if kind == "max" else ()
    # padding="same": Keras' torch backend pads a copy of the input (-inf for a max
    # pool), alive with the input until the pooling returns, where an axis needs more
    # padding on one side than the other; symmetric padding is the pooling's own
    totals = [
        max((o - 1) * s + k - n, 0)
        for n, o, k, s in zip(shape[:-1], spatial, pool, strides, strict=True)
    ]
    padded = 0
    if padding == "same" and any(t % 2 for t in totals):
        padded = shape[-1] * prod(tuple(n + t for n, t in zip(shape[:-1], totals, strict=True)))
    return LayerStats(
        index=0,
        type="",
        output_shape=out,
        trainable_params=0,
        non_trainable_params=0,
        flops=prod(pool) * out_el,
        saves_input=True,
        internal_saved=saved,
        inference_transient=padded,
        # max_pool2d/3d make their int64 indices without autograd too; 1-D does not
        inference_index=out_el if kind == "max" and rank > 1 else 0,
    )


def global_pool(raw: Mapping[str, Any], shape: Shape, rank: int, kind: str) -> LayerStats:
    a = Args(raw, {"data_format", "keepdims"}, frozenset())
    a.data_format()
    check_rank(shape, rank + 1, SPATIAL[rank])
    keepdims = a.flag("keepdims", False)
    out = (*([1] * rank), shape[-1]) if keepdims else (shape[-1],)
    return LayerStats(
        index=0,
        type="",
        output_shape=tuple(out),
        trainable_params=0,
        non_trainable_params=0,
        flops=prod(shape),
        saves_input=kind == "max",  # amax keeps input and result; mean keeps only sizes
    )
