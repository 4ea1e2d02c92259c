"""A Keras model file as one functional model table, the same the models TOML holds.

Reads Keras 3 `model.to_json()`, a Keras 3 `.keras` archive (only its
`config.json`, with `zipfile`; weights are never loaded and no Keras code runs)
and tf.keras 2 `to_json()` (its older `inbound_nodes` lists), and writes the
functional syntax of the models file (docs/fit.md):

- every layer keeps Keras' class name as `type` and Keras' own argument names;
  initializers, regularizers, constraints, seeds and dtype policies are dropped
  (they change numbers, not shapes or memory), so are `null` values (TOML has
  none, and every layer reads a missing argument as Keras' default);
- `inputs` are given on every layer: `"NAME"` or `"NAME:i"` for output `i` of a
  layer with several outputs; a recurrent layer's `initial_state` tensors follow
  its sequence input; MultiHeadAttention gets query, value[, key];
- a layer Keras calls again (a shared layer) becomes `{ reuse = FIRST_CALL }`;
- nested Functional/Sequential models become `blocks`, called by
  `{ block = NAME }`, `trainable = false` where Keras froze them;
- Keras operations recorded in a functional graph (`x + 3.0`, `x * (1/6)` in
  MobileNetV3's hard-sigmoid) become the layer that does the same arithmetic:
  a scalar operand is a `Rescaling`, two tensors the merge layer of that name.

The caller owns what the file does not say (batch size, optimizer, mode) and
adds them to `KerasModel.table`; `KerasModel.precision` is the mixed-precision
policy the model was built under, as one of `gputui.fit.precision.PRECISIONS`.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from gputui.errors import UserError
from gputui.fit.importers.detect import detect_kind, read_archive_config, read_json
from gputui.fit.importers.keras_classes import KERAS_LAYER_CLASSES
from gputui.fit.importers.keras_schema import MODEL_CLASSES, check_keras_document
from gputui.textsafe import visible

SourceFormat = Literal["keras3", "tf.keras2"]

# keras_hub (formerly keras_nlp) layers the fit checker knows (learned positions).
KERAS_HUB_LAYERS = frozenset({"PositionEmbedding", "TokenAndPositionEmbedding"})
_HUB_PACKAGES = frozenset({"keras_hub", "keras_nlp"})
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
# Call-time keyword arguments holding input tensors, in the order the layer takes them.
_TENSOR_KWARGS = ("query", "value", "key", "initial_state")
# Call-time keyword arguments that are really layer options. Other call-time tensors
# (masks) are left out with a warning; other values (training=False) change nothing here.
_OPTION_KWARGS = frozenset({"use_causal_mask", "return_attention_scores"})
# Dtype policies and the precision (gputui.fit.precision) each means on PyTorch.
_POLICIES = {
    "mixed_float16": "amp_fp16",
    "mixed_bfloat16": "amp_bf16",
    "float16": "fp16",
    "bfloat16": "bf16",
}
# keras.ops recorded in a functional graph: the merge layer doing the same with two tensors.
_OP_MERGES = {
    "Add": "Add",
    "Subtract": "Subtract",
    "Multiply": "Multiply",
    "Maximum": "Maximum",
    "Minimum": "Minimum",
}
_SCALAR_OPS = frozenset({"Add", "Subtract", "Multiply", "Divide", "TrueDivide"})


@dataclass(frozen=True, slots=True)
class KerasModel:
    """What a Keras file says about a model, in the models file's functional syntax."""

    table: dict[str, Any]  # one [[model]] table: name, kind, inputs, outputs, layers[, blocks]
    precision: str | None  # "amp_fp16" for mixed_float16, ...; None: float32 (no policy)
    warnings: tuple[str, ...]  # e.g. unknown layers treated as identity (--skip-unknown)
    source_format: SourceFormat


# ------------------------------------------------------------------------------------------
# Reading: Keras' JSON into a small graph of layers and their calls


Tensor = tuple[str, int, int]  # (layer name, node index, tensor index), Keras' keras_history


@dataclass(slots=True)
class _Call:
    inputs: list[Tensor]
    shapes: list[list[int | None] | None]  # Keras 3 writes each input tensor's shape
    options: dict[str, Any]  # call kwargs that are layer options (use_causal_mask)
    dropped: list[str]  # tensor kwargs not modelled (masks)
    constants: list[Any]  # non-tensor positional operands (a keras.ops scalar)
    constant_first: bool = False  # the scalar came before the tensor (3.0 - x)


@dataclass(slots=True)
class _Layer:
    name: str
    class_name: str
    module: str | None
    registered: str | None
    config: dict[str, Any]
    calls: list[_Call]
    sub: _Graph | None = None  # a nested model


@dataclass(slots=True)
class _Graph:
    name: str
    layers: list[_Layer]
    inputs: list[Tensor]
    outputs: list[Tensor]
    trainable: bool


class _Reader:
    """Parses either JSON format; every malformed field is one UserError naming it."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.saw_keras3 = False
        self.saw_keras2 = False

    def fail(self, what: str, reason: str) -> UserError:
        return UserError(f"{self.where}: {what}: {reason}")

    def model(self, obj: Any, what: str) -> _Graph:
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

    def _layer(self, raw: Any, what: str) -> _Layer:
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
        layer = _Layer(
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

    def sequential(self, config: Any, what: str) -> _Graph:
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
            first_input = _Layer(
                name=_unique("input", {lay.name for lay in layers}),
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
            layer.calls.append(_Call([previous], [None], {}, [], []))
            previous = (layer.name, 0, 0)
        return _Graph(
            name=name,
            layers=layers,
            inputs=[(first_input.name, 0, 0)],
            outputs=[previous],
            trainable=config.get("trainable", True) is not False,
        )

    def functional(self, config: dict[str, Any], what: str) -> _Graph:
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
        graph = _Graph(
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

    def _node(self, node: Any, layer: str) -> _Call:
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

    def _node3(self, node: dict[str, Any], layer: str) -> _Call:
        """Keras 3: {"args": [...], "kwargs": {...}} holding __keras_tensor__ objects."""
        call = _Call([], [], {}, [], [])
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

    def _node2(self, node: list[Any], layer: str) -> _Call:
        """tf.keras 2: [[name, node, tensor, kwargs], ...]; other arguments in the kwargs."""
        call = _Call([], [], {}, [], [])
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
    def _kwargs(kwargs: Mapping[str, Any], call: _Call, is_tensor: Any, tensor: Any) -> None:
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


def _renumber_model_nodes(graph: _Graph, legacy: bool) -> None:
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


def _unique(base: str, taken: set[str]) -> str:
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    return name


# ------------------------------------------------------------------------------------------
# Writing: the graph as the models file's functional table


@dataclass(slots=True)
class _Writer:
    where: str
    skip_unknown: bool
    blocks: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    policies: Counter[str] = field(default_factory=Counter)
    unknown: list[tuple[str, str, str]] = field(default_factory=list)  # (layer, class, why)

    def graph(
        self,
        graph: _Graph,
        input_shapes: Mapping[str, Sequence[int]] | None,
        frozen: bool = False,
    ) -> dict[str, Any]:
        """The graph's table; `frozen`: inside a block Keras froze (trainable = False)."""
        if frozen:
            graph.trainable = False
        by_name = {layer.name: layer for layer in graph.layers}
        if len(by_name) != len(graph.layers):
            dup = next(n for n, c in Counter(lay.name for lay in graph.layers).items() if c > 1)
            raise UserError(f"{self.where}: model {graph.name!r}: layer name {dup!r} is used twice")
        input_names = [t[0] for t in graph.inputs]
        for name in input_names:
            if name not in by_name or by_name[name].class_name != "InputLayer":
                raise UserError(
                    f"{self.where}: model {graph.name!r}: input_layers names {name!r}, "
                    "which is not an InputLayer of the model"
                )
        for tensor in graph.inputs:
            self._input_ref(tensor, "input_layers names", graph)
        call_names = self._call_names(graph)
        alias: dict[tuple[str, int], Tensor] = {}  # a skipped call -> the input it passes on
        # Shapes Keras 3 recorded for each tensor where it is consumed.
        recorded = {
            t: shape
            for layer in graph.layers
            for call in layer.calls
            for t, shape in zip(call.inputs, call.shapes, strict=True)
            if shape is not None
        }
        # Only the model itself can take new inputs: a block's callers pass what it declares.
        stand_ins: list[str] | None = [] if input_shapes is not None else None
        layers_out: list[dict[str, Any]] = []
        for layer, node in self._order(graph, by_name):
            call = layer.calls[node]
            resolved = [self._resolve(t, alias, by_name, graph) for t in call.inputs]
            if self._skipped(layer, node, call, resolved, alias, recorded, by_name, stand_ins):
                continue
            layers_out.append(self._entry(layer, node, call, call_names, resolved, graph, by_name))
        for tensor in graph.outputs:
            source = by_name.get(tensor[0])
            if source is not None and source.class_name == "InputLayer":
                self._input_ref(tensor, "output_layers takes", graph)
            elif source is not None and tensor[1] >= len(source.calls):
                raise UserError(
                    f"{self.where}: model {graph.name!r}: output_layers takes call "
                    f"{tensor[1]} of {tensor[0]!r}, which is called {len(source.calls)} time(s)"
                )
        outputs = [
            self._ref(self._resolve(t, alias, by_name, graph), call_names, by_name)
            for t in graph.outputs
        ]
        if stand_ins:
            # Inputs that fed only skipped layers are left out (nothing would use them).
            used = {ref.split(":")[0] for entry in layers_out for ref in entry["inputs"]}
            used |= {ref.split(":")[0] for ref in outputs}
            for name in [n for n in input_names if n not in used]:
                input_names.remove(name)
                self.warnings.append(f"input {name!r} feeds only skipped layers; left out")
        table: dict[str, Any] = {
            "inputs": [
                self._input(by_name[n], graph, input_shapes)
                for n in input_names + (stand_ins or [])
            ],
            "outputs": outputs,
            "layers": layers_out,
        }
        return table

    # --- order and names ---

    @staticmethod
    def _call_names(graph: _Graph) -> dict[tuple[str, int], str]:
        """Call 0 keeps the layer's name; later calls are NAME_call2, NAME_call3, ..."""
        taken = {layer.name for layer in graph.layers}
        names: dict[tuple[str, int], str] = {}
        for layer in graph.layers:
            for node in range(len(layer.calls)):
                if node == 0:
                    names[(layer.name, 0)] = layer.name
                else:
                    name = _unique(f"{layer.name}_call{node + 1}", taken)
                    taken.add(name)
                    names[(layer.name, node)] = name
        return names

    def _order(self, graph: _Graph, by_name: dict[str, _Layer]) -> list[tuple[_Layer, int]]:
        """Every call in graph order, ties in Keras' layer order (as Keras runs them)."""
        position = {layer.name: i for i, layer in enumerate(graph.layers)}
        pending: dict[tuple[str, int], set[tuple[str, int]]] = {}
        users: dict[tuple[str, int], list[tuple[str, int]]] = {}
        for layer in graph.layers:
            if layer.class_name == "InputLayer":
                continue
            for node, call in enumerate(layer.calls):
                deps = set()
                for tensor in call.inputs:
                    source = by_name.get(tensor[0])
                    if source is None:
                        raise UserError(
                            f"{self.where}: model {graph.name!r}: layer {layer.name!r} takes "
                            f"input from {tensor[0]!r}, which is not a layer of the model"
                        )
                    if source.class_name == "InputLayer":
                        self._input_ref(tensor, f"layer {layer.name!r} takes", graph)
                        continue
                    if tensor[1] >= len(source.calls):
                        raise UserError(
                            f"{self.where}: model {graph.name!r}: layer {layer.name!r} takes "
                            f"call {tensor[1]} of {tensor[0]!r}, which is called "
                            f"{len(source.calls)} time(s)"
                        )
                    deps.add((tensor[0], tensor[1]))
                pending[(layer.name, node)] = deps
                for dep in deps:
                    users.setdefault(dep, []).append((layer.name, node))
        ready = [(position[n], i, n) for (n, i), deps in pending.items() if not deps]
        heapq.heapify(ready)
        order: list[tuple[_Layer, int]] = []
        while ready:
            _, node, name = heapq.heappop(ready)
            order.append((by_name[name], node))
            for user in users.get((name, node), []):
                pending[user].discard((name, node))
                if not pending[user]:
                    heapq.heappush(ready, (position[user[0]], user[1], user[0]))
        if len(order) != len(pending):
            stuck = next(n for (n, _), deps in pending.items() if deps)
            raise UserError(f"{self.where}: model {graph.name!r}: layer {stuck!r} is in a cycle")
        return order

    def _input_ref(self, tensor: Tensor, who: str, graph: _Graph) -> None:
        """An InputLayer has one node and one tensor: [name, 0, 0]."""
        if tensor[1] != 0 or tensor[2] != 0:
            raise UserError(
                f"{self.where}: model {graph.name!r}: {who} [{tensor[0]!r}, {tensor[1]}, "
                f"{tensor[2]}], but an input has only node 0, tensor 0"
            )

    def _resolve(
        self,
        tensor: Tensor,
        alias: dict[tuple[str, int], Tensor],
        by_name: dict[str, _Layer],
        graph: _Graph,
    ) -> Tensor:
        if tensor[0] not in by_name:
            raise UserError(
                f"{self.where}: model {graph.name!r}: {tensor[0]!r} is not a layer of the model"
            )
        while (tensor[0], tensor[1]) in alias:
            tensor = alias[(tensor[0], tensor[1])]
        return tensor

    @staticmethod
    def _ref(
        tensor: Tensor, call_names: dict[tuple[str, int], str], by_name: dict[str, _Layer]
    ) -> str:
        name, node, index = tensor
        if by_name[name].class_name != "InputLayer":
            name = call_names[(name, node)]
        return f"{name}:{index}" if index else name

    # --- unknown layers ---

    def _unknown_reason(self, layer: _Layer, call: _Call) -> str | None:
        """Why this layer cannot be described, or None when it can."""
        if layer.class_name in MODEL_CLASSES or layer.class_name == "InputLayer":
            return None
        if layer.module is not None and layer.module.startswith("keras.src.ops"):
            if _op_layer(layer, call) is None:
                op = layer.module.removeprefix("keras.src.") + "." + layer.class_name
                return f"Keras operation {op} is not supported"
            return None
        package = _package(layer)
        if package in _HUB_PACKAGES:
            if layer.class_name in KERAS_HUB_LAYERS:
                return None
            return f"{package} layer class {layer.class_name!r} is not supported"
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

    def _skipped(
        self,
        layer: _Layer,
        node: int,
        call: _Call,
        resolved: list[Tensor],
        alias: dict[tuple[str, int], Tensor],
        recorded: Mapping[Tensor, list[int | None]],
        by_name: dict[str, _Layer],
        stand_ins: list[str] | None,
    ) -> bool:
        why = self._unknown_reason(layer, call)
        if why is None:
            return False
        if not self.skip_unknown:
            # Carry on (as identity) so that the error can say how many there are.
            if node == 0:
                self.unknown.append((layer.name, layer.class_name, why))
            if resolved:
                alias[(layer.name, node)] = resolved[0]
            return True
        if not resolved:
            raise UserError(
                f"{self.where}: layer {layer.name!r} ({layer.class_name}): {why}, and it has "
                "no input to pass on, so it cannot be skipped"
            )
        label = f"layer {layer.name!r} ({layer.class_name}): {why}"
        before = call.shapes[0] if call.shapes else None
        after = recorded.get((layer.name, node, 0))
        if (
            stand_ins is not None
            and before is not None
            and after is not None
            and before[1:] != after[1:]
            and all(isinstance(d, int) for d in after[1:])
        ):
            # Identity would hand the next layer the wrong shape: Keras recorded the shape
            # this layer makes, so its output enters the graph as an input of that shape.
            name = _unique(f"{layer.name}_output", set(by_name))
            by_name[name] = _Layer(name, "InputLayer", None, None, {"batch_shape": after}, [])
            stand_ins.append(name)
            alias[(layer.name, node)] = (name, 0, 0)
            self.warnings.append(
                f"{label}; skipped: it turns {_show_shape(before[1:])} into "
                f"{_show_shape(after[1:])}, so its output enters as input {name!r}; its "
                "parameters, activations and the gradient to what feeds it are not counted"
            )
            return True
        if node == 0:
            extra = (
                f" (its {len(resolved)} inputs: the first is passed on)"
                if len(resolved) > 1
                else ""
            )
            self.warnings.append(
                f"{label}; treated as identity, its parameters and activations are not "
                f"counted{extra}"
            )
        alias[(layer.name, node)] = resolved[0]  # every output of the call
        return True

    def raise_unknown(self) -> None:
        """Without --skip-unknown: the first unknown layer, and how many more there are."""
        if not self.unknown:
            return
        layer, cls, why = self.unknown[0]
        more = len(self.unknown) - 1
        also = f" (and {more} more unknown layer{'s' if more > 1 else ''})" if more else ""
        raise UserError(
            f"{self.where}: layer {layer!r} ({cls}): {why}{also}; "
            "--skip-unknown treats unknown layers as identity"
        )

    # --- one call ---

    def _entry(
        self,
        layer: _Layer,
        node: int,
        call: _Call,
        call_names: dict[tuple[str, int], str],
        resolved: list[Tensor],
        graph: _Graph,
        by_name: dict[str, _Layer],
    ) -> dict[str, Any]:
        inputs = [self._ref(t, call_names, by_name) for t in resolved]
        name = call_names[(layer.name, node)]
        for key in call.dropped:
            self.warnings.append(
                f"layer {name!r} ({layer.class_name}): its {key} input is not modelled"
            )
        if node > 0:
            return {"name": name, "reuse": layer.name, "inputs": inputs}
        entry: dict[str, Any] = {"name": name}
        trainable = graph.trainable and layer.config.get("trainable", True) is not False
        if layer.sub is not None:
            entry["block"] = self._block(layer, call, frozen=not trainable)
        elif layer.module is not None and layer.module.startswith("keras.src.ops"):
            op = _op_layer(layer, call)
            assert op is not None  # _unknown_reason let it through
            entry.update(op)
        else:
            self._policy(layer.config)
            entry["type"] = layer.class_name
            notes: list[str] = []
            entry.update(_arguments(layer.class_name, layer.config, notes))
            _default_attention_axes(entry, layer.config, call)
            self.warnings.extend(f"layer {name!r} ({layer.class_name}): {n}" for n in notes)
            entry.update(call.options)
        entry["inputs"] = inputs
        if not trainable:
            entry["trainable"] = False
        return entry

    def _block(self, layer: _Layer, call: _Call, frozen: bool) -> str:
        """A nested model as a block (every block at the model's top level)."""
        assert layer.sub is not None
        name = _unique(layer.sub.name, set(self.blocks))
        self.blocks[name] = {}  # reserve the name before nested blocks take theirs
        block = self.graph(layer.sub, None, frozen)
        # Block inputs without a fixed shape take it from the call, where Keras wrote one.
        for spec, shape in zip(block["inputs"], call.shapes, strict=False):
            if (
                "shape" not in spec
                and shape is not None
                and all(isinstance(d, int) for d in shape[1:])
            ):
                spec["shape"] = list(shape[1:])
        self.blocks[name] = block
        return name

    def _input(
        self, layer: _Layer, graph: _Graph, given: Mapping[str, Sequence[int]] | None
    ) -> dict[str, Any]:
        config = layer.config
        batch_shape = config.get("batch_shape", config.get("batch_input_shape"))
        if batch_shape is None and isinstance(config.get("shape"), list):
            batch_shape = [None, *config["shape"]]
        if not isinstance(batch_shape, list) or not batch_shape:
            raise UserError(f"{self.where}: input {layer.name!r}: no batch_shape in its config")
        shape = list(batch_shape[1:])
        spec: dict[str, Any] = {"name": layer.name}
        if given is not None and layer.name in given:
            shape = self._given_shape(layer.name, shape, given[layer.name])
        if all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
            spec["shape"] = shape
        elif given is not None:  # the top-level model: the user must say
            fixed = ",".join("N" if d is None else str(d) for d in shape)
            raise UserError(
                f"{self.where}: input {layer.name!r} has a variable dimension "
                f"(shape {_show_shape(shape)}); give it, e.g. --input-shape {layer.name}={fixed} "
                f"or input_shapes = {{ {layer.name} = [{fixed.replace(',', ', ')}] }}"
            )
        dtype = config.get("dtype")
        if isinstance(dtype, str) and dtype.startswith(("int", "uint")):
            spec["dtype"] = dtype
        return spec

    def _given_shape(self, name: str, keras: list[Any], given: Sequence[int]) -> list[int]:
        shape = list(given)
        if not shape or not all(
            isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape
        ):
            raise UserError(
                f"{self.where}: input {name!r}: the shape given must be positive integers, "
                f"got {list(given)!r}"
            )
        if len(shape) != len(keras):
            raise UserError(
                f"{self.where}: input {name!r}: the shape given has {len(shape)} dimension(s), "
                f"the model's has {len(keras)} ({_show_shape(keras)})"
            )
        for axis, (mine, theirs) in enumerate(zip(shape, keras, strict=True)):
            if theirs is not None and mine != theirs:
                raise UserError(
                    f"{self.where}: input {name!r}: dimension {axis + 1} is {theirs} in the "
                    f"model, the shape given says {mine}"
                )
        return shape

    def _policy(self, config: Mapping[str, Any]) -> None:
        name = _policy_name(config.get("dtype"))
        if name is not None:
            self.policies[name] += 1

    def precision(self) -> str | None:
        """The model's precision: a mixed policy anywhere wins (Keras' guide keeps the
        output layer in float32); else a half policy held by most layers."""
        mixed = [p for p in ("mixed_float16", "mixed_bfloat16") if self.policies[p]]
        if mixed:
            if len(mixed) > 1:
                chosen = max(mixed, key=lambda p: self.policies[p])
                self.warnings.append(
                    "layers use both mixed_float16 and mixed_bfloat16 policies; "
                    f"estimated as {chosen}"
                )
                return _POLICIES[chosen]
            return _POLICIES[mixed[0]]
        total = sum(self.policies.values())
        for half in ("float16", "bfloat16"):
            if total and self.policies[half] * 2 > total:
                return _POLICIES[half]
        return None


def _show_shape(shape: Sequence[Any]) -> str:
    """As Python prints a shape tuple: (200,), (None, 71)."""
    dims = ["None" if d is None else str(d) for d in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _policy_name(dtype: Any) -> str | None:
    """Keras 3 DTypePolicy / tf.keras 2 Policy objects, or a bare dtype string."""
    if isinstance(dtype, str):
        return dtype
    if isinstance(dtype, dict):
        config = dtype.get("config")
        if isinstance(config, dict) and isinstance(config.get("name"), str):
            return str(config["name"])
    return None


def _package(layer: _Layer) -> str | None:
    """The package a layer class comes from: "my_pkg" of "my_pkg>Scale", else its module's."""
    if layer.registered is not None and ">" in layer.registered:
        return layer.registered.partition(">")[0]
    return layer.module.partition(".")[0] if layer.module is not None else None


def _op_layer(layer: _Layer, call: _Call) -> dict[str, Any] | None:
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


def _arguments(
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
                notes.append(f"argument {key} = {_show_shape(value)} holds None; left out")
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
                return {"type": visible(cls), **_arguments(cls, inner)}
            return _value(inner)
        return {str(k): v for k, v in ((k, _value(v)) for k, v in value.items()) if v is not None}
    if isinstance(value, list):
        return [_value(v) for v in value]
    if isinstance(value, str):
        return visible(value)
    return value


def _default_attention_axes(entry: dict[str, Any], config: Mapping[str, Any], call: _Call) -> None:
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


# ------------------------------------------------------------------------------------------
# Entry points


def keras_table(
    data: Any,
    where: str,
    *,
    name: str | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    skip_unknown: bool = False,
) -> KerasModel:
    """A parsed Keras model JSON as a functional model table.

    `where` names the file in errors. `input_shapes` gives per-sample shapes
    (no batch axis) for model inputs, required where Keras has a `None`.
    With `skip_unknown`, custom layers pass their first input on and a warning
    says so; without, the first one is a UserError naming its class and layer.
    """
    check_keras_document(data, where)  # every field the reader follows has its type
    reader = _Reader(where)
    graph = reader.model(data, "model")
    given = dict(input_shapes or {})
    input_names = [t[0] for t in graph.inputs]
    for key in given:
        if key not in input_names:
            raise UserError(
                f"{where}: input shape given for {visible(key)!r}, which is not an input of the "
                f"model (its inputs: {', '.join(input_names)})"
            )
    writer = _Writer(where, skip_unknown)
    body = writer.graph(graph, given)
    writer.raise_unknown()
    table: dict[str, Any] = {
        "name": visible(name) if name is not None else graph.name,
        "kind": "functional",
        **body,
    }
    if writer.blocks:
        table["blocks"] = writer.blocks
    precision = writer.precision()
    # tf.keras 2 writes its version at the top; Keras 3 does not, but writes `module`.
    version = data.get("keras_version") if isinstance(data, dict) else None
    legacy = reader.saw_keras2 or not reader.saw_keras3
    if isinstance(version, str):
        legacy = version.startswith(("1.", "2."))
    fmt: SourceFormat = "tf.keras2" if legacy else "keras3"
    return KerasModel(table, precision, tuple(writer.warnings), fmt)


def load_keras(
    path: Path,
    *,
    name: str | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    skip_unknown: bool = False,
    where: str | None = None,
) -> KerasModel:
    """A Keras `to_json()` file or `.keras` archive at `path` as a functional model table."""
    shown = where if where is not None else visible(str(path))
    kind = detect_kind(path)
    if kind == "keras-json":
        data = read_json(path)
    elif kind == "keras-archive":
        data = read_archive_config(path)
    else:
        raise UserError(f"{shown}: not a Keras model file (it reads as {kind})")
    return keras_table(data, shown, name=name, input_shapes=input_shapes, skip_unknown=skip_unknown)
