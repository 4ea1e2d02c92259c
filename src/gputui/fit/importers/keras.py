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

The work is split by job: keras_schema.py checks the document's structure,
keras_read.py reads it into layers and calls, keras_layers.py says what one layer
becomes, and this module writes the graph table.

The caller owns what the file does not say (batch size, optimizer, mode) and
adds them to `KerasModel.table`; `KerasModel.precision` is the mixed-precision
policy the model was built under, as one of `gputui.fit.core.precision.PRECISIONS`.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from gputui.core.errors import UserError
from gputui.core.textsafe import visible
from gputui.fit.importers.detect import detect_kind, read_archive_config, read_json
from gputui.fit.importers.keras_layers import (
    arguments,
    default_attention_axes,
    given_shape,
    op_layer,
    policy_name,
    show_shape,
    unknown_reason,
)
from gputui.fit.importers.keras_read import Call, Graph, Layer, Reader, Tensor, name_calls, unique
from gputui.fit.importers.keras_schema import check_keras_document

SourceFormat = Literal["keras3", "tf.keras2"]

# Dtype policies and the precision (gputui.fit.core.precision) each means on PyTorch.
_POLICIES = {
    "mixed_float16": "amp_fp16",
    "mixed_bfloat16": "amp_bf16",
    "float16": "fp16",
    "bfloat16": "bf16",
}


@dataclass(frozen=True, slots=True)
class KerasModel:
    """What a Keras file says about a model, in the models file's functional syntax."""

    table: dict[str, Any]  # one [[model]] table: name, kind, inputs, outputs, layers[, blocks]
    precision: str | None  # "amp_fp16" for mixed_float16, ...; None: float32 (no policy)
    warnings: tuple[str, ...]  # e.g. unknown layers treated as identity (--skip-unknown)
    source_format: SourceFormat


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
        graph: Graph,
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
        call_names = name_calls(graph)
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

    def _order(self, graph: Graph, by_name: dict[str, Layer]) -> list[tuple[Layer, int]]:
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
        order: list[tuple[Layer, int]] = []
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

    def _input_ref(self, tensor: Tensor, who: str, graph: Graph) -> None:
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
        by_name: dict[str, Layer],
        graph: Graph,
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
        tensor: Tensor, call_names: dict[tuple[str, int], str], by_name: dict[str, Layer]
    ) -> str:
        name, node, index = tensor
        if by_name[name].class_name != "InputLayer":
            name = call_names[(name, node)]
        return f"{name}:{index}" if index else name

    # --- unknown layers ---

    def _skipped(
        self,
        layer: Layer,
        node: int,
        call: Call,
        resolved: list[Tensor],
        alias: dict[tuple[str, int], Tensor],
        recorded: Mapping[Tensor, list[int | None]],
        by_name: dict[str, Layer],
        stand_ins: list[str] | None,
    ) -> bool:
        why = unknown_reason(layer, call)
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
            name = unique(f"{layer.name}_output", set(by_name))
            by_name[name] = Layer(name, "InputLayer", None, None, {"batch_shape": after}, [])
            stand_ins.append(name)
            alias[(layer.name, node)] = (name, 0, 0)
            self.warnings.append(
                f"{label}; skipped: it turns {show_shape(before[1:])} into "
                f"{show_shape(after[1:])}, so its output enters as input {name!r}; its "
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
        layer: Layer,
        node: int,
        call: Call,
        call_names: dict[tuple[str, int], str],
        resolved: list[Tensor],
        graph: Graph,
        by_name: dict[str, Layer],
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
            op = op_layer(layer, call)
            assert op is not None  # unknown_reason let it through
            entry.update(op)
        else:
            self._policy(layer.config)
            entry["type"] = layer.class_name
            notes: list[str] = []
            entry.update(arguments(layer.class_name, layer.config, notes))
            default_attention_axes(entry, layer.config, call)
            self.warnings.extend(f"layer {name!r} ({layer.class_name}): {n}" for n in notes)
            entry.update(call.options)
        entry["inputs"] = inputs
        if not trainable:
            entry["trainable"] = False
        return entry

    def _block(self, layer: Layer, call: Call, frozen: bool) -> str:
        """A nested model as a block (every block at the model's top level)."""
        assert layer.sub is not None
        name = unique(layer.sub.name, set(self.blocks))
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
        self, layer: Layer, graph: Graph, given: Mapping[str, Sequence[int]] | None
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
            shape = given_shape(self.where, layer.name, shape, given[layer.name])
        if all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
            spec["shape"] = shape
        elif given is not None:  # the top-level model: the user must say
            fixed = ",".join("N" if d is None else str(d) for d in shape)
            raise UserError(
                f"{self.where}: input {layer.name!r} has a variable dimension "
                f"(shape {show_shape(shape)}); give it, e.g. --input-shape {layer.name}={fixed} "
                f"or input_shapes = {{ {layer.name} = [{fixed.replace(',', ', ')}] }}"
            )
        dtype = config.get("dtype")
        if isinstance(dtype, str) and dtype.startswith(("int", "uint")):
            spec["dtype"] = dtype
        return spec

    def _policy(self, config: Mapping[str, Any]) -> None:
        name = policy_name(config.get("dtype"))
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
    reader = Reader(where)
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
