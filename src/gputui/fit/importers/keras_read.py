"""Reading a Keras model document (Keras 3 or tf.keras 2 JSON) into a small graph of
layers and their calls (keras.py writes it out as a models-file table).

The document's structure was checked first (keras_schema.py): every field read here
has its type, so what is left to refuse is what the types cannot say (a layer
without a name, a ':' in one, a Sequential model without an input shape).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gputui.core.errors import UserError
from gputui.core.textsafe import visible
from gputui.fit.importers.keras_schema import MODEL_CLASSES

# Call-time keyword arguments holding input tensors, in the order the layer takes them.
_TENSOR_KWARGS = ("query", "value", "key", "initial_state")
# Call-time keyword arguments that are really layer options. Other call-time tensors
# (masks) are left out with a warning; other values (training=False) change nothing here.
_OPTION_KWARGS = frozenset({"use_causal_mask", "return_attention_scores"})

Tensor = tuple[str, int, int]  # (layer name, node index, tensor index), Keras' keras_history


@dataclass(slots=True)
class Call:
    inputs: list[Tensor]
    shapes: list[list[int | None] | None]  # Keras 3 writes each input tensor's shape
    options: dict[str, Any]  # call kwargs that are layer options (use_causal_mask)
    dropped: list[str]  # tensor kwargs not modelled (masks)
    constants: list[Any]  # non-tensor positional operands (a keras.ops scalar)
    constant_first: bool = False  # the scalar came before the tensor (3.0 - x)


@dataclass(slots=True)
class Layer:
    name: str
    class_name: str
    module: str | None
    registered: str | None
    config: dict[str, Any]
    calls: list[Call]
    sub: Graph | None = None  # a nested model


@dataclass(slots=True)
class Graph:
    name: str
    layers: list[Layer]
    inputs: list[Tensor]
    outputs: list[Tensor]
    trainable: bool


class Reader:
    """Parses either JSON format; every malformed field is one UserError naming it."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.saw_keras3 = False
        self.saw_keras2 = False

    def fail(self, what: str, reason: str) -> UserError:
        return UserError(f"{self.where}: {what}: {reason}")

    def model(self, obj: Any, what: str) -> Graph:
        if not isinstance(obj, dict) or not isinstance(obj.get("class_name"), str):
            raise self.fail(what, "not a Keras model (expected class_name and config)")
        cls = obj["class_name"]
        if "module" in obj or "registered_name" in obj:
            self.saw_keras3 = True
        if cls not in MODEL_CLASSES:
            raise self.fail(
                what,
                f"top-level class {visible(cls)!r} is not a Keras Functional or Sequential model",
            )
        config = obj.get("config")
        if cls == "Sequential":
            return self.sequential(config, what)
        if not isinstance(config, dict):
            raise self.fail(what, "config: must be an object")
        return self.functional(config, what)

    def _name(self, raw: dict[str, Any], what: str) -> str:
        config = raw.get("config")
        name = raw.get("name")
        if not isinstance(name, str) and isinstance(config, dict):
            name = config.get("name")
        if not isinstance(name, str) or not name:
            raise self.fail(what, "layer without a name")
        if ":" in name:
            raise self.fail(f"layer {visible(name)!r}", "a ':' in a layer name is not supported")
        return visible(name)

    def _layer(self, raw: Any, what: str) -> Layer:
        if not isinstance(raw, dict) or not isinstance(raw.get("class_name"), str):
            raise self.fail(what, "not a layer (expected class_name and config)")
        config = raw.get("config")
        if raw["class_name"] == "Sequential" and isinstance(config, list):
            config = {"layers": config}  # Keras < 2.2 wrote a Sequential's layers bare
        if not isinstance(config, dict):
            raise self.fail(what, "config: must be an object")
        name = self._name(raw, what)
        module = raw.get("module")
        registered = raw.get("registered_name")
        if "module" in raw:
            self.saw_keras3 = True
        layer = Layer(
            name=name,
            class_name=visible(raw["class_name"]),
            module=module if isinstance(module, str) else None,
            registered=registered if isinstance(registered, str) else None,
            config=config,
            calls=[],
        )
        if layer.class_name in MODEL_CLASSES:
            layer.sub = self.model(raw, f"layer {name!r} ({layer.class_name})")
        return layer

    def sequential(self, config: Any, what: str) -> Graph:
        if isinstance(config, list):
            config = {"layers": config}
        if not isinstance(config, dict) or not isinstance(config.get("layers"), list):
            raise self.fail(what, "config.layers: a Sequential model needs a list of layers")
        name = visible(str(config.get("name") or "sequential"))
        raw_layers = config["layers"]
        layers = [self._layer(raw, f"{what} layers[{i}]") for i, raw in enumerate(raw_layers)]
        if layers and layers[0].class_name == "InputLayer":
            first_input = layers[0]
        else:
            shape = _sequential_input_shape(config, raw_layers)
            if shape is None:
                raise self.fail(
                    f"model {name!r}",
                    "a Sequential model without an input shape (build it with keras.Input)",
                )
            first_input = Layer(
                name=unique("input", {lay.name for lay in layers}),
                class_name="InputLayer",
                module=None,
                registered=None,
                config={"batch_shape": shape},
                calls=[],
            )
            layers.insert(0, first_input)
        previous: Tensor = (first_input.name, 0, 0)
        for layer in layers[1:]:
            if layer.class_name == "InputLayer":
                raise self.fail(f"layer {layer.name!r} (InputLayer)", "must be the first layer")
            layer.calls.append(Call([previous], [None], {}, [], []))
            previous = (layer.name, 0, 0)
        return Graph(
            name=name,
            layers=layers,
            inputs=[(first_input.name, 0, 0)],
            outputs=[previous],
            trainable=config.get("trainable", True) is not False,
        )

    def functional(self, config: dict[str, Any], what: str) -> Graph:
        raw_layers = config.get("layers")
        if not isinstance(raw_layers, list) or not raw_layers:
            raise self.fail(what, "config.layers: a functional model needs a list of layers")
        name = visible(str(config.get("name") or "model"))
        layers = []
        for i, raw in enumerate(raw_layers):
            layer = self._layer(raw, f"{what} layers[{i}]")
            nodes = raw.get("inbound_nodes", [])
            if not isinstance(nodes, list):
                raise self.fail(f"layer {layer.name!r}", "inbound_nodes: must be a list")
            layer.calls = [self._node(node, layer.name) for node in nodes]
            layers.append(layer)
        graph = Graph(
            name=name,
            layers=layers,
            inputs=self._endpoints(config.get("input_layers"), f"model {name!r}: input_layers"),
            outputs=self._endpoints(config.get("output_layers"), f"model {name!r}: output_layers"),
            trainable=config.get("trainable", True) is not False,
        )
        legacy = any(
            isinstance(n, list) for raw in raw_layers for n in raw.get("inbound_nodes", [])
        )
        _renumber_model_nodes(graph, legacy)
        return graph

    def _endpoints(self, value: Any, what: str) -> list[Tensor]:
        """input_layers/output_layers: [[name, node, tensor], ...] or one bare triple."""
        if _is_triple(value):
            return [_triple(value)]
        if isinstance(value, dict):  # dict-structured inputs: in key order
            value = list(value.values())
        if not isinstance(value, list) or not value:
            raise self.fail(what, "must list [layer, node, tensor] entries")
        out: list[Tensor] = []
        for item in value:
            if not _is_triple(item):
                raise self.fail(what, f"expected [layer, node, tensor], got {visible(repr(item))}")
            out.append(_triple(item))
        return out

    def _node(self, node: Any, layer: str) -> Call:
        try:
            if isinstance(node, dict):
                self.saw_keras3 = True
                return self._node3(node, layer)
            if isinstance(node, list):
                self.saw_keras2 = True
                return self._node2(node, layer)
        except _MalformedError as exc:
            raise self.fail(f"layer {layer!r}", f"inbound_nodes: {exc}") from None
        raise self.fail(f"layer {layer!r}", "inbound_nodes: unreadable node")

    def _node3(self, node: dict[str, Any], layer: str) -> Call:
        """Keras 3: {"args": [...], "kwargs": {...}} holding __keras_tensor__ objects."""
        call = Call([], [], {}, [], [])
        for item in _walk(node.get("args", [])):
            if not call.inputs and not call.constants:
                call.constant_first = not _is_keras3_tensor(item)
            if _is_keras3_tensor(item):
                tensor, shape = _keras3_tensor(item)
                call.inputs.append(tensor)
                call.shapes.append(shape)
            elif isinstance(item, (int, float)) and not isinstance(item, bool):
                call.constants.append(item)
        kwargs = node.get("kwargs", {})
        if not isinstance(kwargs, dict):
            raise self.fail(f"layer {layer!r}", "inbound_nodes: kwargs must be an object")
        self._kwargs(kwargs, call, _is_keras3_tensor, _keras3_tensor)
        return call

    def _node2(self, node: list[Any], layer: str) -> Call:
        """tf.keras 2: [[name, node, tensor, kwargs], ...]; other arguments in the kwargs."""
        call = Call([], [], {}, [], [])
        kwargs: dict[str, Any] = {}
        for entry in _entries2(node):
            if entry[0] == "_CONSTANT_VALUE":
                if isinstance(entry[2], (int, float)) and not isinstance(entry[2], bool):
                    call.constants.append(entry[2])
            else:
                call.inputs.append(_triple(entry[:3]))
                call.shapes.append(None)
            if len(entry) > 3 and isinstance(entry[3], dict) and not kwargs:
                kwargs = entry[3]
        self._kwargs(kwargs, call, _is_triple, lambda t: (_triple(t), None))
        return call

    @staticmethod
    def _kwargs(kwargs: Mapping[str, Any], call: Call, is_tensor: Any, tensor: Any) -> None:
        for key in _TENSOR_KWARGS:
            for item in _walk(kwargs.get(key)):
                if is_tensor(item):
                    ref, shape = tensor(item)
                    call.inputs.append(ref)
                    call.shapes.append(shape)
        for key, value in kwargs.items():
            if key in _TENSOR_KWARGS:
                continue
            if key in _OPTION_KWARGS and isinstance(value, bool):
                call.options[key] = value
            elif any(is_tensor(item) for item in _walk(value)):
                call.dropped.append(key)


def _renumber_model_nodes(graph: Graph, legacy: bool) -> None:
    """Make node indices of nested models count their calls in this model from 0.

    A nested Functional model starts life with a node of its own (linking its
    inputs to its outputs) that the outer model does not list. Keras 3 counts it
    in input_layers/output_layers only (its from_config subtracts 1 there);
    tf.keras 2 counts it everywhere.
    """
    nested = {
        layer.name
        for layer in graph.layers
        if layer.sub is not None and (legacy or layer.class_name == "Functional")
    }
    if not nested:
        return

    def shift(tensor: Tensor) -> Tensor:
        if tensor[0] in nested and tensor[1] > 0:
            return (tensor[0], tensor[1] - 1, tensor[2])
        return tensor

    graph.inputs = [shift(t) for t in graph.inputs]
    graph.outputs = [shift(t) for t in graph.outputs]
    if legacy:
        for layer in graph.layers:
            for call in layer.calls:
                call.inputs = [shift(t) for t in call.inputs]


def _walk(value: Any) -> Iterator[Any]:
    """Leaves of nested lists (a tensor object or triple counts as a leaf)."""
    if isinstance(value, list) and not _is_triple(value):
        for item in value:
            yield from _walk(item)
    elif isinstance(value, dict) and not _is_keras3_tensor(value):
        for item in value.values():
            yield from _walk(item)
    elif value is not None:
        yield value


class _MalformedError(ValueError):
    """A node the reader cannot follow; the reader adds the file and layer."""


def _is_keras3_tensor(item: Any) -> bool:
    return isinstance(item, dict) and item.get("class_name") == "__keras_tensor__"


def _keras3_tensor(item: dict[str, Any]) -> tuple[Tensor, list[int | None] | None]:
    config = item.get("config")
    history: Any = config.get("keras_history") if isinstance(config, dict) else None
    if not _is_triple(history):
        raise _MalformedError("a Keras tensor without [layer, node, tensor] keras_history")
    assert isinstance(config, dict)
    shape = config.get("shape")
    return _triple(history), shape if isinstance(shape, list) else None


def _is_triple(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 3
        and isinstance(value[0], str)
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value[1:])
    )


def _triple(value: list[Any]) -> Tensor:
    return (visible(value[0]), int(value[1]), int(value[2]))


def _entries2(node: list[Any]) -> Iterator[list[Any]]:
    """A tf.keras 2 node's entries [name, node, tensor(, kwargs)], however nested."""
    for item in node:
        if (
            isinstance(item, list)
            and len(item) >= 3
            and isinstance(item[0], str)
            and isinstance(item[1], int)
        ):
            yield item
        elif isinstance(item, list):
            yield from _entries2(item)
        elif isinstance(item, dict):
            yield from _entries2(list(item.values()))


def _sequential_input_shape(config: dict[str, Any], raw_layers: list[Any]) -> list[Any] | None:
    for key in ("batch_input_shape", "batch_shape"):
        if raw_layers and isinstance(raw_layers[0], dict):
            first = raw_layers[0].get("config")
            if isinstance(first, dict) and isinstance(first.get(key), list):
                return list(first[key])
    build = config.get("build_input_shape")
    return list(build) if isinstance(build, list) else None


def name_calls(graph: Graph) -> dict[tuple[str, int], str]:
    """Call 0 keeps the layer's name; later calls are NAME_call2, NAME_call3, ..."""
    taken = {layer.name for layer in graph.layers}
    names: dict[tuple[str, int], str] = {}
    for layer in graph.layers:
        for node in range(len(layer.calls)):
            if node == 0:
                names[(layer.name, 0)] = layer.name
            else:
                name = unique(f"{layer.name}_call{node + 1}", taken)
                taken.add(name)
                names[(layer.name, node)] = name
    return names


def unique(base: str, taken: set[str]) -> str:
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    return name
