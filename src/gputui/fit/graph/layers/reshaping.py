"""Reshaping layers: views (flatten, reshape, permute, cropping) that run nothing, and
copies (padding, repetition, upsampling)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gputui.fit.graph.layer_args import Args, LayerArgError
from gputui.fit.graph.layers.common import SPATIAL, Shape, SingleFn, check_rank, prod
from gputui.fit.graph.stats import LayerStats


def flatten(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    Args(raw, {"data_format"}, frozenset()).data_format()
    return LayerStats(0, "", (prod(shape),), 0, 0, 0, output_is_view=True)


def reshape(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"target_shape"}, frozenset())
    target = a.get("target_shape")
    if (
        not isinstance(target, list)
        or not target
        or not all(
            isinstance(d, int) and not isinstance(d, bool) and (d > 0 or d == -1) for d in target
        )
    ):
        raise LayerArgError("target_shape", f"must be a list of positive integers, got {target!r}")
    total = prod(shape)
    if target.count(-1) > 1:
        raise LayerArgError("target_shape", "only one dimension can be -1")
    known = prod(tuple(d for d in target if d != -1))
    if -1 in target:
        if total % known:
            raise LayerArgError("target_shape", f"cannot reshape {shape} into {tuple(target)}")
        target = [total // known if d == -1 else d for d in target]
    elif known != total:
        raise LayerArgError(
            "target_shape",
            f"cannot reshape {shape} ({total} values) into {tuple(target)} ({known} values)",
        )
    return LayerStats(0, "", tuple(target), 0, 0, 0, output_is_view=True)


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


def repeat_vector(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"n"}, frozenset())
    check_rank(shape, 1, "features")
    n = a.integer("n")
    return LayerStats(0, "", (n, shape[0]), 0, 0, 0)


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


def cropping(rank: int) -> SingleFn:
    def analyse(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
        a = Args(raw, {"cropping", "data_format"}, frozenset())
        a.data_format()
        check_rank(shape, rank + 1, SPATIAL[rank])
        crops = _pairs(a.get("cropping", 1 if rank == 1 else 0), rank, "cropping")
        spatial = tuple(n - lo - hi for n, (lo, hi) in zip(shape[:-1], crops, strict=True))
        if any(n <= 0 for n in spatial):
            raise LayerArgError("cropping", f"{crops} crops the input {shape} to nothing")
        # a slice: a view of the input, its gradient a zero-padded copy
        return LayerStats(0, "", (*spatial, shape[-1]), 0, 0, 0, output_is_view=True)

    return analyse


def zero_padding(rank: int) -> SingleFn:
    def analyse(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
        a = Args(raw, {"padding", "data_format"}, frozenset())
        a.data_format()
        check_rank(shape, rank + 1, SPATIAL[rank])
        pads = _pairs(a.get("padding", 1), rank, "padding")
        spatial = tuple(n + lo + hi for n, (lo, hi) in zip(shape[:-1], pads, strict=True))
        return LayerStats(0, "", (*spatial, shape[-1]), 0, 0, 0)

    return analyse


def zero_padding2d(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"padding", "data_format"}, frozenset())
    a.data_format()
    check_rank(shape, 3, "height, width, channels")
    value = a.get("padding", 1)
    if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
        if len(value) != 2:
            raise LayerArgError("padding", f"must be [[top, bottom], [left, right]], got {value!r}")
        pads = [Args({"p": v}, {"p"}, frozenset()).ints("p", None, 2, minimum=0) for v in value]
    else:
        hw = a.ints("padding", 1, 2, minimum=0)
        pads = [(hw[0], hw[0]), (hw[1], hw[1])]
    out = (shape[0] + sum(pads[0]), shape[1] + sum(pads[1]), shape[2])
    return LayerStats(0, "", out, 0, 0, 0)


def up_sampling1d(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"size"}, frozenset())
    check_rank(shape, 2, "steps, features")
    size = a.integer("size", 2)
    out = (shape[0] * size, shape[1])
    return LayerStats(0, "", out, 0, 0, prod(out))


def up_sampling2d(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"size", "data_format", "interpolation"}, frozenset())
    a.data_format()
    check_rank(shape, 3, "height, width, channels")
    size = a.ints("size", 2, 2)
    a.choice("interpolation", "nearest", ("nearest", "bilinear", "bicubic", "lanczos3", "lanczos5"))
    out = (shape[0] * size[0], shape[1] * size[1], shape[2])
    return LayerStats(0, "", out, 0, 0, prod(out))


def up_sampling3d(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"size", "data_format"}, frozenset())
    a.data_format()
    check_rank(shape, 4, SPATIAL[3])
    size = a.ints("size", 2, 3)
    out = (*(n * s for n, s in zip(shape[:-1], size, strict=True)), shape[-1])
    return LayerStats(0, "", out, 0, 0, prod(out), forward_transient=prod(out))
