"""Every layer type the fit checker knows, and the one entry point that analyses a layer.

`analyse_layer` takes the shapes of all of a layer's inputs (one for most layers;
initial states for recurrent layers; several for merges and attention), applies
`trainable = false`, and bounds every shape and parameter count so that nothing
downstream meets a number too large to mean anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from gputui.fit.graph.args import MAX_DIM, MAX_ELEMENTS, MAX_PARAMS, LayerArgError
from gputui.fit.graph.layers import LAYERS, bidirectional, recurrent_layer
from gputui.fit.graph.layers_more import SINGLE, time_distributed
from gputui.fit.graph.layers_multi import ATTENTION_MODES, MULTI, SINGLE_MORE, multi_head_attention
from gputui.fit.graph.stats import LayerStats

Shape = tuple[int, ...]
MultiFn = Callable[[Mapping[str, Any], tuple[Shape, ...]], LayerStats]

SINGLE_INPUT: dict[str, Callable[[Mapping[str, Any], Shape], LayerStats]] = {
    **LAYERS,
    **SINGLE,
    **SINGLE_MORE,
}
# layers whose extra inputs are initial states
RECURRENT: dict[str, MultiFn] = {
    "SimpleRNN": recurrent_layer("SimpleRNN"),
    "LSTM": recurrent_layer("LSTM"),
    "GRU": recurrent_layer("GRU"),
    "Bidirectional": bidirectional,
}
MULTI_INPUT: dict[str, MultiFn] = dict(MULTI)
WRAPPERS = ("TimeDistributed",)
KNOWN: tuple[str, ...] = tuple(
    sorted({*SINGLE_INPUT, *RECURRENT, *MULTI_INPUT, "MultiHeadAttention", *WRAPPERS})
)


def is_known(kind: object) -> bool:
    return isinstance(kind, str) and kind in KNOWN


def analyse_layer(
    index: int,
    raw: Mapping[str, Any],
    shapes: tuple[Shape, ...],
    *,
    attention: str = "auto",
) -> LayerStats:
    """One layer's stats for inputs of `shapes`; raises LayerArgError(field, reason)."""
    kind = raw.get("type")
    if not is_known(kind):
        raise LayerArgError("type", f"unknown layer type {kind!r} (known: {', '.join(KNOWN)})")
    assert isinstance(kind, str)
    trainable = raw.get("trainable", True)
    if not isinstance(trainable, bool):
        raise LayerArgError("trainable", f"must be true or false, got {trainable!r}")
    if attention not in ATTENTION_MODES:
        raise LayerArgError("attention", f"must be one of {', '.join(ATTENTION_MODES)}")
    if kind in SINGLE_INPUT or kind in WRAPPERS:
        if len(shapes) != 1:
            raise LayerArgError("inputs", f"{kind} takes one input, got {len(shapes)}")
        if kind == "TimeDistributed":
            stats = time_distributed(_inner)(raw, shapes[0])
        else:
            stats = SINGLE_INPUT[kind](raw, shapes[0])
    elif kind in RECURRENT:
        stats = RECURRENT[kind](raw, shapes)
    elif kind == "MultiHeadAttention":
        stats = multi_head_attention(raw, shapes, attention)
    else:
        stats = MULTI_INPUT[kind](raw, shapes)
    _bounded(stats)
    if trainable is False:
        stats = freeze(stats)
    return replace(stats, index=index, type=kind)


def _inner(index: int, raw: Mapping[str, Any], shapes: tuple[Shape, ...]) -> LayerStats:
    return analyse_layer(index, raw, shapes)


def freeze(stats: LayerStats) -> LayerStats:
    """`trainable = false`: every weight becomes non-trainable (no gradient, no state)."""
    return replace(
        stats,
        trainable_params=0,
        non_trainable_params=stats.params,
        saves_input_if_trainable=False,
        backward_param_transient=0,
    )


def _bounded(stats: LayerStats) -> None:
    for shape in (stats.output_shape, *stats.extra_outputs):
        for d in shape:
            if not 1 <= d <= MAX_DIM:
                what = "is empty" if d < 1 else f"has a dimension over {MAX_DIM}"
                raise LayerArgError(
                    "output shape",
                    f"{tuple(shape)} {what}: every dimension must be between 1 and at most "
                    f"{MAX_DIM}",
                )
        n = 1
        for d in shape:
            n *= d
        if n > MAX_ELEMENTS:
            raise LayerArgError(
                "output shape",
                f"{tuple(shape)} holds {n:.3g} values per sample; at most {MAX_ELEMENTS:.3g}",
            )
    if stats.params > MAX_PARAMS:
        raise LayerArgError(
            "params", f"{stats.params:.3g} parameters in one layer; at most {MAX_PARAMS:.3g}"
        )
