"""TimeDistributed: the inner layer on (batch x steps, *rest), scaled back per sample.
(Bidirectional, which wraps only recurrent layers, is in recurrent.py.)"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from gputui.fit.graph.layer_args import Args, LayerArgError
from gputui.fit.graph.layers.common import Shape, SingleFn
from gputui.fit.graph.stats import LayerStats, Saved


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
