"""What every layer family shares: the per-sample shape, element counts, rank checks and
Keras axes (the batch axis is never part of a shape here)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from gputui.fit.graph.layer_args import LayerArgError
from gputui.fit.graph.stats import LayerStats

Shape = tuple[int, ...]


# A layer of one input (its per-sample shape), and one of several (merges, attention,
# recurrent layers with initial states).
SingleFn = Callable[[Mapping[str, Any], Shape], LayerStats]
MultiFn = Callable[[Mapping[str, Any], tuple[Shape, ...]], LayerStats]


def prod(shape: Shape) -> int:
    return math.prod(shape) if shape else 1


SPATIAL = {1: "steps, channels", 2: "height, width, channels", 3: "depth, height, width, channels"}


def keras_axis(value: Any, shape: Shape, field: str = "axis") -> int:
    """A Keras axis (0 is the batch, negative counts from the end) as an index into `shape`."""
    rank = len(shape)
    if isinstance(value, bool) or not isinstance(value, int) or not -rank <= value <= rank:
        raise LayerArgError(field, f"must be an axis of the input (batch, *{shape}), got {value!r}")
    if value == 0:
        raise LayerArgError(field, "axis 0 is the batch axis")
    return value - 1 if value > 0 else rank + value


def check_rank(shape: Shape, rank: int, what: str) -> None:
    if len(shape) != rank:
        raise LayerArgError(
            "input shape",
            f"expects a {rank}-D input per sample ({what}), got {shape}",
        )
