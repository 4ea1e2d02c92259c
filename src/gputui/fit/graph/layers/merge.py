"""Merge layers of several inputs: an addition or a concatenation keeps nothing and hands
its gradient (or slices of it) on; a product, a maximum or a dot keeps both operands."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gputui.fit.graph.layer_args import Args, LayerArgError
from gputui.fit.graph.layers.common import MultiFn, Shape, keras_axis, prod
from gputui.fit.graph.stats import LayerStats, Saved


def _at_least(shapes: tuple[Shape, ...], n: int, what: str) -> None:
    if len(shapes) < n:
        raise LayerArgError("inputs", f"{what} needs at least {n} inputs, got {len(shapes)}")


def same_shapes(shapes: tuple[Shape, ...], kind: str) -> Shape:
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


def elementwise(kind: str) -> MultiFn:
    def analyse(raw: Mapping[str, Any], shapes: tuple[Shape, ...]) -> LayerStats:
        Args(raw, set(), frozenset())
        shape = same_shapes(shapes, kind)
        if kind == "Subtract" and len(shapes) != 2:
            raise LayerArgError("inputs", f"Subtract takes exactly 2 inputs, got {len(shapes)}")
        el = prod(shape)
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
    extra = (Saved(prod(x) + prod(y)),) if normalize else ()
    return LayerStats(
        0,
        "",
        out or (1,),
        0,
        0,
        2 * prod(out or (1,)) * x[ax],
        saves_input=True,
        internal_saved=extra,
    )
