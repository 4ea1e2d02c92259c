"""The shape of a Keras model document, checked before anything reads it.

The importer (keras.py) follows class names, configs, inbound nodes and
`keras_history` triples through the JSON; this walk runs first and refuses any of
them of the wrong type with its JSON path (`config.layers[3].inbound_nodes[0]`),
so that a damaged file is one line naming the field, never a TypeError deep in the
reader. It also bounds what Keras would refuse or what cannot be a model: input
dimensions (positive integers up to MAX_DIM, or null; a product up to
MAX_ELEMENTS), node and tensor indices (non-negative integers), nesting of models
(MAX_BLOCK_DEPTH) and of a call's arguments (MAX_NESTING).

What Keras itself accepts stays accepted: a layer's config name may differ from
its name in the model, layers may come before their inputs, a Sequential config
may be a bare list of layers (Keras < 2.2), and a call's arguments may hold
constants and nested lists or dicts of tensors.
"""

from __future__ import annotations

import math
from typing import Any

from gputui.core.errors import UserError
from gputui.core.textsafe import visible
from gputui.fit.graph.calls import MAX_BLOCK_DEPTH
from gputui.fit.graph.layer_args import MAX_DIM, MAX_ELEMENTS
from gputui.fit.graph.limits import MAX_LAYERS, too_many_layers

MODEL_CLASSES = frozenset({"Functional", "Model", "Sequential"})
# Lists and objects inside one call's arguments; Keras nests a few levels at most.
MAX_NESTING = 32
# A scalar operand of a recorded keras.ops call (x * 0.5): beyond this a float overflows.
MAX_OPERAND = 1e300
_KERAS_TENSOR = "__keras_tensor__"
_CONSTANT = "_CONSTANT_VALUE"  # tf.keras 2's entry for a non-tensor operand
_INPUT_SHAPE_KEYS = ("batch_shape", "batch_input_shape")


def json_type(value: Any) -> str:
    """A value's type as JSON names it (what the user sees in the file)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r:.30}"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_DIM


def _class_name(layer: Any) -> str | None:
    """A layer's class name where it is a string (the type checks come after the count)."""
    name = layer.get("class_name") if isinstance(layer, dict) else None
    return name if isinstance(name, str) else None


class _Checker:
    def __init__(self, where: str) -> None:
        self.where = where
        self.layers = 0  # layer objects seen so far, nested models' included

    def count(self, layers: list[Any], path: str) -> None:
        """Refuse a document past MAX_LAYERS before anything else reads its layers (the
        graph walk bounds the calls again, blocks expanded)."""
        skipped = MODEL_CLASSES | {"InputLayer"}  # containers and inputs make no node
        self.layers += sum(1 for lay in layers if _class_name(lay) not in skipped)
        if self.layers > MAX_LAYERS:
            raise too_many_layers(f"{self.where}: {path}config.layers", self.layers)

    def fail(self, path: str, reason: str) -> UserError:
        return UserError(f"{self.where}: {path or 'the document'}: {reason}")

    # --- models and layers ---

    def model(self, obj: Any, path: str, depth: int) -> None:
        if depth > MAX_BLOCK_DEPTH:
            raise self.fail(path, f"models nest deeper than {MAX_BLOCK_DEPTH} levels")
        cls = obj["class_name"]
        config = obj["config"]
        if cls == "Sequential" and isinstance(config, list):
            config = {"layers": config}  # Keras < 2.2 wrote a Sequential's layers bare
        elif not isinstance(config, dict):
            raise self.fail(f"{path}config", f"must be an object, got {json_type(config)}")
        self.optional(config, f"{path}config.", "name", str)
        self.optional(config, f"{path}config.", "trainable", bool)
        layers = config.get("layers")
        if not isinstance(layers, list):
            raise self.fail(f"{path}config.layers", f"must be a list, got {json_type(layers)}")
        self.count(layers, path)
        for i, layer in enumerate(layers):
            self.layer(layer, f"{path}config.layers[{i}]", depth)
        if cls == "Sequential":
            shape = config.get("build_input_shape")
            if shape is not None:
                self.dims(shape, f"{path}config.build_input_shape")
            return
        for key in ("input_layers", "output_layers"):
            if key in config:
                self.endpoints(config[key], f"{path}config.{key}")

    def layer(self, obj: Any, path: str, depth: int) -> None:
        if not isinstance(obj, dict):
            raise self.fail(path, f"must be a layer object, got {json_type(obj)}")
        cls = obj.get("class_name")
        if not isinstance(cls, str) or not cls:
            raise self.fail(f"{path}.class_name", f"must be a string, got {json_type(cls)}")
        name = obj.get("name")
        if "name" in obj and (not isinstance(name, str) or not name):
            raise self.fail(f"{path}.name", f"must be a non-empty string, got {json_type(name)}")
        for key in ("module", "registered_name"):
            self.optional(obj, f"{path}.", key, str)
        config = obj.get("config")
        if not isinstance(config, dict) and not (cls == "Sequential" and isinstance(config, list)):
            raise self.fail(f"{path}.config", f"must be an object, got {json_type(config)}")
        shown = (
            name
            if isinstance(name, str)
            else config.get("name")
            if isinstance(config, dict)
            else None
        )
        at = f"layer {visible(shown)!r}: {path}" if isinstance(shown, str) else path
        if isinstance(config, dict):
            for key, value in config.items():
                if key != "layers" or cls not in MODEL_CLASSES:
                    self.nesting(value, f"{at}.config.{key}")
            self.optional(config, f"{at}.config.", "name", str)
            self.optional(config, f"{at}.config.", "trainable", bool)
            dtype = config.get("dtype")
            if dtype is not None and not isinstance(dtype, (str, dict)):
                raise self.fail(
                    f"{at}.config.dtype", f"must be a name or an object, got {json_type(dtype)}"
                )
            for key in _INPUT_SHAPE_KEYS:
                if config.get(key) is not None:
                    self.dims(config[key], f"{at}.config.{key}")
            if cls == "InputLayer" and config.get("shape") is not None:
                self.dims(config["shape"], f"{at}.config.shape", batch=False)
        if "inbound_nodes" in obj:
            self.nodes(obj["inbound_nodes"], f"{at}.inbound_nodes")
        if cls in MODEL_CLASSES:
            self.model(obj, f"{path}.", depth + 1)

    def optional(self, obj: dict[str, Any], path: str, key: str, kind: type) -> None:
        value = obj.get(key)
        if value is not None and not isinstance(value, kind):
            want = {str: "a string", bool: "true or false"}[kind]
            raise self.fail(f"{path}{key}", f"must be {want}, got {json_type(value)}")

    # --- shapes ---

    def dims(self, value: Any, path: str, *, batch: bool = True) -> None:
        """A declared input shape: [batch, d1, ...], each a positive integer or null."""
        if not isinstance(value, list) or len(value) < (2 if batch else 1):
            what = "[batch, dimension, ...]" if batch else "a list of dimensions"
            raise self.fail(path, f"must be a shape {what}, got {visible(repr(value)):.60}")
        product = 1
        for i, dim in enumerate(value):
            if dim is None:
                continue
            if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= MAX_DIM:
                raise self.fail(
                    f"{path}[{i}]",
                    f"a dimension must be a positive integer at most {MAX_DIM}, or null; "
                    f"got {visible(repr(dim)):.40}",
                )
            if i > 0 or not batch:
                product *= dim
        if product > MAX_ELEMENTS:
            raise self.fail(
                path, f"holds {product:.3g} values per sample; at most {MAX_ELEMENTS:.3g}"
            )

    def recorded_shape(self, value: Any, path: str) -> None:
        """The shape Keras 3 recorded for a tensor: null or non-negative integers / nulls."""
        if value is None:
            return
        if not isinstance(value, list) or not all(d is None or _index(d) for d in value):
            raise self.fail(
                path,
                f"must be a list of non-negative integers or nulls, got {visible(repr(value)):.60}",
            )

    # --- calls ---

    def endpoints(self, value: Any, path: str) -> None:
        """input_layers / output_layers: one [layer, node, tensor], or a list or object of them."""
        if isinstance(value, list) and value and isinstance(value[0], str):
            self.history(value, path)
            return
        items = list(value.items()) if isinstance(value, dict) else None
        if isinstance(value, list):
            items = [(str(i), v) for i, v in enumerate(value)]
        if not items:
            raise self.fail(
                path, f"must list [layer, node, tensor] entries, got {json_type(value)}"
            )
        for key, item in items:
            where = f"{path}[{key}]" if isinstance(value, list) else f"{path}.{key}"
            self.history(item, where)

    def history(self, value: Any, path: str) -> None:
        """A [layer name, node index, tensor index] triple."""
        if (
            not isinstance(value, list)
            or len(value) != 3
            or not isinstance(value[0], str)
            or not value[0]
            or not _index(value[1])
            or not _index(value[2])
        ):
            raise self.fail(
                path,
                "must be [layer name, node index, tensor index] (indices non-negative "
                f"integers), got {visible(repr(value)):.60}",
            )

    def nodes(self, value: Any, path: str) -> None:
        if not isinstance(value, list):
            raise self.fail(path, f"must be a list of calls, got {json_type(value)}")
        for i, node in enumerate(value):
            where = f"{path}[{i}]"
            if isinstance(node, dict):  # Keras 3: {"args": [...], "kwargs": {...}}
                args, kwargs = node.get("args", []), node.get("kwargs", {})
                if not isinstance(args, list):
                    raise self.fail(f"{where}.args", f"must be a list, got {json_type(args)}")
                if not isinstance(kwargs, dict):
                    raise self.fail(
                        f"{where}.kwargs", f"must be an object, got {json_type(kwargs)}"
                    )
                self.arguments(args, f"{where}.args", 0)
                self.arguments(kwargs, f"{where}.kwargs", 0)
            elif isinstance(node, list):  # tf.keras 2: [[name, node, tensor, kwargs], ...]
                self.entries(node, where, 0)
            else:
                raise self.fail(
                    where,
                    f"must be a call (an object, or a list of entries), got {json_type(node)}",
                )

    def arguments(self, value: Any, path: str, depth: int) -> None:
        """A Keras 3 call's arguments: any values, with well-formed tensors among them."""
        if depth > MAX_NESTING:
            raise self.fail(path, f"arguments nest deeper than {MAX_NESTING} levels")
        if isinstance(value, dict):
            if value.get("class_name") == _KERAS_TENSOR:
                config = value.get("config")
                if not isinstance(config, dict):
                    raise self.fail(f"{path}.config", f"must be an object, got {json_type(config)}")
                self.history(config.get("keras_history"), f"{path}.config.keras_history")
                self.recorded_shape(config.get("shape"), f"{path}.config.shape")
                return
            for key, item in value.items():
                self.arguments(item, f"{path}.{key}", depth + 1)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                self.arguments(item, f"{path}[{i}]", depth + 1)
        elif isinstance(value, float) and not math.isfinite(value):
            raise self.fail(path, f"an operand must be a finite number, got {value!r}")
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_OPERAND:
            raise self.fail(path, f"an operand must be at most {MAX_OPERAND:.3g} in size")

    def nesting(self, value: Any, path: str) -> None:
        """A layer argument nests at most MAX_NESTING lists or objects (the reader recurses)."""
        level = [value]
        for _ in range(MAX_NESTING + 1):
            level = [
                item
                for inner in level
                if isinstance(inner, (list, dict))
                for item in (inner.values() if isinstance(inner, dict) else inner)
            ]
            if not level:
                return
        raise self.fail(path, f"nests deeper than {MAX_NESTING} levels")

    def entries(self, value: list[Any], path: str, depth: int) -> None:
        """A tf.keras 2 call: [name, node, tensor(, kwargs)] entries, possibly nested."""
        if depth > MAX_NESTING:
            raise self.fail(path, f"entries nest deeper than {MAX_NESTING} levels")
        if value and isinstance(value[0], str):
            self.entry(value, path, depth)
            return
        for i, item in enumerate(value):
            if isinstance(item, list):
                self.entries(item, f"{path}[{i}]", depth + 1)
            elif isinstance(item, dict):
                for key, inner in item.items():
                    if not isinstance(inner, list):
                        raise self.fail(
                            f"{path}[{i}].{key}", "must be a [layer, node, tensor] entry"
                        )
                    self.entries(inner, f"{path}[{i}].{key}", depth + 1)
            else:
                raise self.fail(
                    f"{path}[{i}]",
                    f"must be a [layer, node, tensor] entry, got {json_type(item)}",
                )

    def entry(self, value: list[Any], path: str, depth: int) -> None:
        if len(value) not in (3, 4):
            raise self.fail(
                path, f"must be [layer, node, tensor(, kwargs)], got {len(value)} items"
            )
        if len(value) == 4:
            if not isinstance(value[3], dict):
                raise self.fail(f"{path}[3]", f"must be an object, got {json_type(value[3])}")
            self.arguments(value[3], f"{path}[3]", depth + 1)
        if value[0] == _CONSTANT:
            self.arguments(value[2], f"{path}[2]", depth + 1)  # the operand (x * 0.5)
        else:
            self.history(value[:3], path)


def check_keras_document(data: Any, where: str) -> None:
    """Refuse a Keras document with a structural field of the wrong type (UserError,
    one line naming `where` and the JSON path); return when the reader can follow it."""
    checker = _Checker(where)
    if not isinstance(data, dict) or not isinstance(data.get("class_name"), str):
        raise checker.fail("", "not a Keras model (expected class_name and config)")
    for key in ("module", "registered_name", "keras_version"):
        checker.optional(data, "", key, str)
    if data["class_name"] in MODEL_CLASSES:
        checker.model(data, "", 0)
