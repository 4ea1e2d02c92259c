"""What one Keras layer becomes in the models file: its arguments in Keras' own names,
a recorded keras.ops call as the layer doing the same arithmetic, or why it cannot
be described (a custom layer, user code, an unsupported operation).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gputui.core.errors import UserError
from gputui.core.textsafe import visible
from gputui.fit.importers.keras_classes import KERAS_LAYER_CLASSES
from gputui.fit.importers.keras_read import Call, Layer
from gputui.fit.importers.keras_schema import MODEL_CLASSES

# keras_hub (formerly keras_nlp) layers the fit checker knows (learned positions).
KERAS_HUB_LAYERS = frozenset({"PositionEmbedding", "TokenAndPositionEmbedding"})
_HUB_PACKAGES = frozenset({"keras_hub", "keras_nlp"})
# Layers keras.applications defines in its own modules, not in keras.layers, by the
# application module that defines each (Keras 3, tf.keras 2 and tf_keras name it so).
APPLICATION_LAYERS = {
    "LayerScale": "convnext",
    "StochasticDepth": "convnext",
    "CustomScaleLayer": "inception_resnet_v2",
}
_APPLICATION_PACKAGES = (
    "keras.src.applications.",
    "keras.applications.",
    "tf_keras.src.applications.",
)
# Built-in Keras classes whose behaviour is user code: unknown like a custom layer.
USER_CODE_CLASSES = frozenset({"Lambda", "TFOpLambda", "SlicingOpLambda", "TorchModuleWrapper"})
# Keys of a layer config that change numerics, not shapes, parameter counts or memory.
_DROPPED_KEYS = frozenset({"name", "trainable", "dtype", "seed", "build_config"})
_DROPPED_SUFFIXES = ("_initializer", "_regularizer", "_constraint")
# Shapes tf.keras 2 writes into a layer's config once built: not arguments.
_BUILD_KEYS = {"MultiHeadAttention": frozenset({"query_shape", "key_shape", "value_shape"})}
# Arguments Keras writes into every config that, at these values, change nothing the
# fit checker models: the same as leaving them out (Keras' default). Other values pass
# through, so a renorm=True BatchNormalization is reported rather than mis-estimated.
_INERT_ARGUMENTS: dict[str, dict[str, Any]] = {
    "BatchNormalization": {"renorm": False},
    "MultiHeadAttention": {"use_gate": False, "softmax_robust_masking": False},
    "DepthwiseConv1D": {"groups": 1},
    "DepthwiseConv2D": {"groups": 1},
    "Conv1DTranspose": {"groups": 1},
    "Conv2DTranspose": {"groups": 1},
    "Conv3DTranspose": {"groups": 1},
}
# With renorm off, Keras still writes its renorm settings; they are never used.
_UNUSED_WITHOUT = {"BatchNormalization": ("renorm", ("renorm_momentum", "renorm_clipping"))}
# tf.keras 2's RNN `implementation` picks how the gates are batched into matmuls in
# TensorFlow: numerics and speed, not the tensors PyTorch keeps.
_LAYOUT_ONLY = {"LSTM": {"implementation"}, "GRU": {"implementation"}, "SimpleRNN": set()}
# Keys that only declare the model input (tf.keras 2 lets any first layer do it).
_INPUT_KEYS = frozenset({"batch_input_shape", "batch_shape", "input_shape", "batch_size"})
# keras.ops recorded in a functional graph: the merge layer doing the same with two tensors.
_OP_MERGES = {
    "Add": "Add",
    "Subtract": "Subtract",
    "Multiply": "Multiply",
    "Maximum": "Maximum",
    "Minimum": "Minimum",
}
_SCALAR_OPS = frozenset({"Add", "Subtract", "Multiply", "Divide", "TrueDivide"})


def show_shape(shape: Sequence[Any]) -> str:
    """As Python prints a shape tuple: (200,), (None, 71)."""
    dims = ["None" if d is None else str(d) for d in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def policy_name(dtype: Any) -> str | None:
    """Keras 3 DTypePolicy / tf.keras 2 Policy objects, or a bare dtype string."""
    if isinstance(dtype, str):
        return dtype
    if isinstance(dtype, dict):
        config = dtype.get("config")
        if isinstance(config, dict) and isinstance(config.get("name"), str):
            return str(config["name"])
    return None


def _package(layer: Layer) -> str | None:
    """The package a layer class comes from: "my_pkg" of "my_pkg>Scale", else its module's."""
    if layer.registered is not None and ">" in layer.registered:
        return layer.registered.partition(">")[0]
    return layer.module.partition(".")[0] if layer.module is not None else None


def op_layer(layer: Layer, call: Call) -> dict[str, Any] | None:
    """A keras.ops call recorded in a functional graph, as the layer doing the same."""
    op = layer.class_name
    if len(call.inputs) == 2 and not call.constants and op in _OP_MERGES:
        return {"type": _OP_MERGES[op]}
    if len(call.inputs) != 1 or len(call.constants) != 1 or op not in _SCALAR_OPS:
        return None
    value = float(call.constants[0])
    # Whether the scalar came first matters only for subtraction and division.
    first = call.constant_first
    if op == "Add":
        scale, offset = 1.0, value
    elif op == "Subtract":
        scale, offset = (-1.0, value) if first else (1.0, -value)
    elif op == "Multiply":
        scale, offset = value, 0.0
    else:
        if first or value == 0.0:
            return None  # c / x is not an affine map of x
        scale, offset = 1.0 / value, 0.0
    return {"type": "Rescaling", "scale": scale, "offset": offset}


def arguments(
    class_name: str, config: Mapping[str, Any], notes: list[str] | None = None
) -> dict[str, Any]:
    """A layer config as the models file's arguments (Keras' names, TOML-writable values).

    A list holding `None` (a noise_shape of (None, 1, C)) cannot be written in TOML:
    noise_shape only shapes a dropout mask and is dropped; anything else is dropped
    with a note, so the layer falls back to Keras' default for it.
    """
    out: dict[str, Any] = {}
    build_keys = _BUILD_KEYS.get(class_name, frozenset())
    for key, value in config.items():
        if key in _DROPPED_KEYS or key in _INPUT_KEYS or key in build_keys:
            continue
        if key.endswith(_DROPPED_SUFFIXES):
            continue
        converted = _value(value)
        if converted is None:
            continue
        if _holds_none(converted):
            if key != "noise_shape" and notes is not None:
                notes.append(f"argument {key} = {show_shape(value)} holds None; left out")
            continue
        out[key] = converted
    for key, inert in _INERT_ARGUMENTS.get(class_name, {}).items():
        if key in out and out[key] == inert and type(out[key]) is type(inert):
            del out[key]
    if class_name in _UNUSED_WITHOUT:
        switch, unused = _UNUSED_WITHOUT[class_name]
        if not config.get(switch, False):
            for key in unused:
                out.pop(key, None)
    for key in _LAYOUT_ONLY.get(class_name, set()):
        out.pop(key, None)
    axis = out.get("axis")
    if class_name == "BatchNormalization" and isinstance(axis, list) and len(axis) == 1:
        out["axis"] = axis[0]  # tf.keras 2 writes BatchNormalization(axis=3) as [3]
    if class_name == "Bidirectional" and _mirrors(out.get("layer"), out.get("backward_layer")):
        del out["backward_layer"]  # Keras writes the automatic mirror out in full
    return out


def _value(value: Any) -> Any:
    """Nested layer configs become `{ type = ..., ... }`; nulls disappear."""
    if value is None:
        return None
    if isinstance(value, dict):
        if isinstance(value.get("class_name"), str) and "config" in value:
            inner = value["config"]
            if isinstance(inner, dict):
                cls = value["class_name"]
                return {"type": visible(cls), **arguments(cls, inner)}
            return _value(inner)
        return {str(k): v for k, v in ((k, _value(v)) for k, v in value.items()) if v is not None}
    if isinstance(value, list):
        return [_value(v) for v in value]
    if isinstance(value, str):
        return visible(value)
    return value


def default_attention_axes(entry: dict[str, Any], config: Mapping[str, Any], call: Call) -> None:
    """Keras writes MultiHeadAttention's resolved attention_axes; at the default (every
    axis between batch and features: [1] for a (batch, steps, features) query) it is the
    same as leaving it out."""
    if entry.get("type") != "MultiHeadAttention" or "attention_axes" not in entry:
        return
    query = call.shapes[0] if call.shapes else None
    if query is None and isinstance(config.get("query_shape"), list):
        query = config["query_shape"]  # tf.keras 2 writes the built shapes into the config
    if query is not None and entry["attention_axes"] == list(range(1, len(query) - 1)):
        del entry["attention_axes"]


def _holds_none(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, list):
        return any(_holds_none(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_none(v) for v in value.values())
    return False


def _mirrors(forward: Any, backward: Any) -> bool:
    """True when Bidirectional's backward layer is the forward one run backwards."""
    if not isinstance(forward, dict) or not isinstance(backward, dict):
        return backward is None
    ignore = {"go_backwards"}
    return {k: v for k, v in forward.items() if k not in ignore} == {
        k: v for k, v in backward.items() if k not in ignore
    }


def is_application_layer(layer: Layer) -> bool:
    """A keras.applications layer class, from the application module that defines it."""
    home = APPLICATION_LAYERS.get(layer.class_name)
    if home is None or layer.module is None:
        return False
    return any(layer.module == prefix + home for prefix in _APPLICATION_PACKAGES)


def unknown_reason(layer: Layer, call: Call) -> str | None:
    """Why this layer cannot be described, or None when it can."""
    if layer.class_name in MODEL_CLASSES or layer.class_name == "InputLayer":
        return None
    if layer.module is not None and layer.module.startswith("keras.src.ops"):
        if op_layer(layer, call) is None:
            op = layer.module.removeprefix("keras.src.") + "." + layer.class_name
            return f"Keras operation {op} is not supported"
        return None
    package = _package(layer)
    if package in _HUB_PACKAGES:
        if layer.class_name in KERAS_HUB_LAYERS:
            return None
        return f"{package} layer class {layer.class_name!r} is not supported"
    if is_application_layer(layer):
        return None
    if layer.registered is not None and ">" in layer.registered:
        return f"custom layer class {layer.class_name!r} (registered as {layer.registered!r})"
    if layer.module is not None and not layer.module.startswith("keras"):
        return f"custom layer class {layer.class_name!r} (from {visible(layer.module)})"
    if layer.class_name in USER_CODE_CLASSES:
        return f"layer class {layer.class_name!r} runs user code"
    if layer.class_name not in KERAS_LAYER_CLASSES:
        if layer.module is not None and layer.module != "keras.layers":
            # e.g. keras.applications' ConvNeXt LayerScale: Keras code, not a keras.layers
            return f"layer class {layer.class_name!r} from {visible(layer.module)} is not a keras.layers class"
        return f"unknown layer class {layer.class_name!r} (a custom layer?)"
    return None


def given_shape(where: str, name: str, keras: list[Any], given: Sequence[int]) -> list[int]:
    """A shape the user gave (--input-shape) for an input Keras leaves partly open."""
    shape = list(given)
    if not shape or not all(
        isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape
    ):
        raise UserError(
            f"{where}: input {name!r}: the shape given must be positive integers, "
            f"got {list(given)!r}"
        )
    if len(shape) != len(keras):
        raise UserError(
            f"{where}: input {name!r}: the shape given has {len(shape)} dimension(s), "
            f"the model's has {len(keras)} ({show_shape(keras)})"
        )
    for axis, (mine, theirs) in enumerate(zip(shape, keras, strict=True)):
        if theirs is not None and mine != theirs:
            raise UserError(
                f"{where}: input {name!r}: dimension {axis + 1} is {theirs} in the "
                f"model, the shape given says {mine}"
            )
    return shape
