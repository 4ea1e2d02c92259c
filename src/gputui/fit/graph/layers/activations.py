"""Activations: which tensor each one's backward keeps, as a layer of its own or fused into
a Dense/Conv layer (`fold_activation`), and which ones autocast runs in fp32."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gputui.fit.graph.layer_args import Args, LayerArgError
from gputui.fit.graph.layers.common import Shape, keras_axis, prod
from gputui.fit.graph.stats import LayerStats, Saved

# Which tensor each activation's backward needs (PyTorch): its output, its input, or none.
ACTIVATIONS: dict[str, str] = {
    "linear": "none",
    "relu": "output",
    "sigmoid": "output",
    "tanh": "output",
    "softmax": "output",
    "log_softmax": "output",
    "exponential": "output",
    "elu": "input",
    "selu": "input",
    "gelu": "input",
    "silu": "input",
    "swish": "input",
    "softplus": "input",
    "softsign": "input",
    "hard_sigmoid": "input",
    "hard_silu": "input",
    "hard_swish": "input",
    "relu6": "input",
    "leaky_relu": "input",
    "mish": "input",
    "celu": "input",
}


def parse_activation(raw: Mapping[str, Any], name: str = "activation") -> str:
    value = raw.get(name)
    if value is None:
        return "linear"
    if not isinstance(value, str) or value.lower() not in ACTIVATIONS:
        raise LayerArgError(name, f"unknown activation {value!r} (known: {', '.join(ACTIVATIONS)})")
    return value.lower()


# Ops PyTorch's autocast runs in fp32 whatever their input (its "fp32 list").
AUTOCAST_FP32 = frozenset({"softmax", "log_softmax", "exponential", "softplus"})


def fold_activation(act: str, out_elements: int) -> dict[str, Any]:
    """The autograd cost of an activation fused into a Dense/Conv layer."""
    keeps = ACTIVATIONS[act]
    if act in AUTOCAST_FP32:
        return {
            "saves_output": keeps == "output",
            "internal_saved": (Saved(out_elements),) if keeps == "input" else (),
            "forward_transient": out_elements,
            "fused_activation": keeps,
            "autocast_fp32": True,
        }
    if keeps == "output":
        # the pre-activation lives only while the activation runs
        return {"saves_output": True, "forward_transient": out_elements, "fused_activation": keeps}
    if keeps == "input":
        return {"internal_saved": (Saved(out_elements),), "fused_activation": keeps}
    return {}


def activation_layer(act: str, shape: Shape) -> LayerStats:
    keeps = ACTIVATIONS[act]
    el = prod(shape)
    if keeps == "none":
        return LayerStats(0, "", shape, 0, 0, 0, output_is_view=True)
    return LayerStats(
        0,
        "",
        shape,
        0,
        0,
        4 * el,
        saves_input=keeps == "input",
        saves_output=keeps == "output",
        autocast_fp32=act in AUTOCAST_FP32,
    )


def activation(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    Args(raw, {"activation"}, frozenset())
    if "activation" not in raw:
        raise LayerArgError("activation", "is required")
    return activation_layer(parse_activation(raw), shape)


def relu(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    """Keras 3's ReLU as its torch backend runs it (ReLU.static_call).

    max_value = 6 alone is relu6 (keeps its input); another max_value is relu then
    clip (the relu output is kept by both); a threshold multiplies by a float mask
    (keeps input and mask); a negative_slope alone is leaky_relu, with the others
    it adds relu(-x + threshold), which keeps its output.
    """
    a = Args(raw, {"max_value", "negative_slope", "threshold"}, frozenset())
    max_value = a.number("max_value", 0.0, 0.0, math.inf) if a.has("max_value") else None
    slope = a.number("negative_slope", 0.0, 0.0, math.inf)
    threshold = a.number("threshold", 0.0, 0.0, math.inf)
    if max_value is None and not slope and not threshold:
        return activation_layer("relu", shape)
    if slope and max_value is None and not threshold:
        return activation_layer("leaky_relu", shape)
    if max_value == 6 and not slope and not threshold:
        return activation_layer("relu6", shape)
    el = prod(shape)
    kept = 0
    saves_input = False
    if slope:
        kept += 1  # relu(-x + threshold)'s output
    if threshold:
        saves_input = True
        kept += 1  # the float mask x > threshold
        if max_value is not None:
            kept += 1  # x * mask, kept by the clip
    elif max_value == 6:
        saves_input = True
    else:
        kept += 1  # relu's output, kept by relu and by the clip after it
    return LayerStats(
        0,
        "",
        shape,
        0,
        0,
        4 * el,
        saves_input=saves_input,
        internal_saved=(Saved(kept * el),) if kept else (),
        forward_transient=2 * el if slope else el,
    )


def leaky_relu(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"negative_slope", "alpha"}, frozenset())
    for name in ("negative_slope", "alpha"):
        if a.has(name):
            a.number(name, 0.3, 0.0, math.inf)
    return activation_layer("leaky_relu", shape)


def softmax(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"axis"}, frozenset())
    axis = a.get("axis", -1)
    for x in axis if isinstance(axis, list) else [axis]:
        keras_axis(x, shape)
    return activation_layer("softmax", shape)


def elu(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"alpha"}, frozenset())
    a.number("alpha", 1.0, 0.0, math.inf)
    return activation_layer("elu", shape)


def prelu(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(
        raw,
        {"shared_axes"},
        frozenset({"alpha_initializer", "alpha_regularizer"}) | {"alpha_constraint"},
    )
    shared = a.get("shared_axes", [])
    if isinstance(shared, int) and not isinstance(shared, bool):
        shared = [shared]
    if not isinstance(shared, list):
        raise LayerArgError("shared_axes", f"must be a list of axes, got {shared!r}")
    axes = {keras_axis(x, shape, "shared_axes") for x in shared}
    alpha = prod(tuple(1 if i in axes else n for i, n in enumerate(shape)))
    el = prod(shape)
    # Keras: relu(x) - alpha * relu(-x): relu keeps its output twice over, the
    # product keeps alpha's operand relu(-x)
    return LayerStats(
        0,
        "",
        shape,
        alpha,
        0,
        4 * el,
        internal_saved=(Saved(2 * el),),
        forward_transient=2 * el,
        param_tensors=(alpha,),
    )
