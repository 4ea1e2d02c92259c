"""From layer tables to a Network: the walk over a model's graphs.

One builder serves both syntaxes: a sequential stack is a graph where each layer
reads the one before (the default when a layer names no `inputs`), so both are
estimated by the same walk. A functional model names its inputs, may use
`"NAME:i"` for output i of a layer with several outputs, `reuse` to call a layer
again with the same weights, and `block` to call a sub-graph from `blocks`.
Name resolution is in names.py, the graph order in order.py, what each entry adds
(layer calls, shared layers, block calls) in calls.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gputui.core.errors import UserError
from gputui.fit.graph.calls import MAX_LAYERS, LayerCalls
from gputui.fit.graph.names import (
    Scope,
    Site,
    input_specs,
    layer_label,
    layer_names,
    output_specs,
)
from gputui.fit.graph.network import ModelInput, Network, Ref, Shape
from gputui.fit.graph.order import graph_order
from gputui.fit.graph.syntax import listed, only_keys, parse_shape

LOSSES = (
    "categorical_crossentropy",
    "sparse_categorical_crossentropy",
    "binary_crossentropy",
    "mse",
    "mean_squared_error",
    "mae",
    "mean_absolute_error",
    "huber",
    "kl_divergence",
    "cosine_similarity",
)
_DTYPES = ("float32", "float16", "bfloat16", "float64", "int32", "int64", "int16", "int8", "uint8")
_TOKEN_LAYERS = ("Embedding", "TokenAndPositionEmbedding")
_INPUT_KEYS = {"name", "shape", "dtype"}


class GraphBuilder(LayerCalls):
    """Builds one model's Network from its tables (`model`, or `sequential_network`)."""

    # ------------------------------------------------------------ functional

    def model(self, raw: Mapping[str, Any]) -> Network:
        inputs = self._model_inputs(raw.get("inputs"))
        self.input_shapes = [i.shape for i in inputs]
        blocks = raw.get("blocks", {})
        if not isinstance(blocks, dict) or not all(isinstance(b, dict) for b in blocks.values()):
            raise UserError(f"{self.ctx}: blocks: must be tables like [model.blocks.NAME]")
        self.blocks = blocks
        scope = Scope({i.name: [(-1 - k, 0)] for k, i in enumerate(inputs)}, inputs[0].name)
        outputs, losses = self.graph(
            raw.get("layers"), raw.get("outputs"), scope, "", "layers", frozen=False, reuse=None
        )
        return self._network(inputs, outputs, losses, raw.get("inputs"))

    def _model_inputs(self, value: Any) -> list[ModelInput]:
        if not isinstance(value, list) or not value:
            raise UserError(
                f"{self.ctx}: inputs: required, a list like "
                '[ { name = "image", shape = [32, 32, 3] } ]'
            )
        out: list[ModelInput] = []
        for k, item in enumerate(value):
            where = f"{self.ctx}: inputs[{k}]"
            if not isinstance(item, dict):
                raise UserError(f'{where}: must be a table like {{ name = "x", shape = [4] }}')
            why = f"unknown field (allowed: {listed(_INPUT_KEYS)})"
            only_keys(item, _INPUT_KEYS, f"{where}: ", why)
            name = item.get("name")
            if not isinstance(name, str) or not name or ":" in name:
                raise UserError(f"{where}: name: required, a string without ':'")
            if any(i.name == name for i in out):
                raise UserError(f"{where}: name: {name!r} is used twice")
            shape = parse_shape(item.get("shape"), where, "shape")
            dtype = item.get("dtype")
            if dtype is not None and dtype not in _DTYPES:
                raise UserError(
                    f"{where}: dtype: must be one of {', '.join(_DTYPES)}, got {dtype!r}"
                )
            out.append(
                ModelInput(name, shape, bool(dtype) and str(dtype).startswith(("int", "uint")))
            )
        return out

    def _network(
        self,
        inputs: list[ModelInput],
        outputs: list[Ref],
        losses: list[str],
        raw_inputs: Any,
    ) -> Network:
        # an input without a dtype holds token ids when an embedding reads it
        fixed = []
        for k, inp in enumerate(inputs):
            given = isinstance(raw_inputs, list) and "dtype" in raw_inputs[k]
            readers = [n for n in self.nodes if (-1 - k, 0) in n.inputs]
            integer = (
                inp.integer
                if given
                else bool(readers) and all(n.stats.type in _TOKEN_LAYERS for n in readers)
            )
            fixed.append(replace(inp, integer=integer))
        return Network(
            tuple(fixed), tuple(self.nodes), tuple(outputs), tuple(self.warnings), tuple(losses)
        )

    # ------------------------------------------------------------ one graph

    def graph(
        self,
        layers: Any,
        outputs_spec: Any,
        scope: Scope,
        prefix: str,
        where: str,
        *,
        frozen: bool,
        reuse: str | None,
        err_where: str | None = None,
    ) -> tuple[list[Ref], list[str]]:
        """Add the nodes of one graph; the refs and losses of its outputs."""
        err_where = err_where or where
        if not isinstance(layers, list) or not layers:
            raise UserError(f"{self.ctx}: {err_where}: required, a non-empty list of layer tables")
        for i, layer in enumerate(layers):
            if not isinstance(layer, dict):
                raise UserError(
                    f'{self.ctx}: {err_where}[{i}]: must be a table like {{ type = "Dense", ... }}'
                )
        if len(self.nodes) + len(layers) > MAX_LAYERS:
            raise UserError(
                f"{self.ctx}: {err_where}: more than {MAX_LAYERS} layers; at most {MAX_LAYERS} "
                "layers are checked"
            )
        names = layer_names(layers, scope, self.ctx, err_where)
        labels = [
            layer_label(layers[i], names[i], prefix, err_where, i, self.ctx, self.named)
            for i in range(len(layers))
        ]
        local = {n: i for i, n in enumerate(names)}
        specs = [
            input_specs(layers, i, names, scope, labels[i], self.named) for i in range(len(layers))
        ]
        order = graph_order(layers, specs, local, labels)
        used: set[str] = set()
        for i in order:
            layer = layers[i]
            refs, shapes = [], []
            for name, idx in specs[i]:
                used.add(name)
                found = scope.refs.get(name)
                if found is None:
                    raise UserError(f"{labels[i]}: inputs: {name!r} is not available here")
                if idx >= len(found):
                    raise UserError(
                        f"{labels[i]}: inputs: {name!r} has {len(found)} output(s), no output {idx}"
                    )
                refs.append(found[idx])
                shapes.append(self._shape_of(found[idx]))
            site = Site(layer, i, prefix + names[i], refs, shapes, labels[i])
            if "block" in layer:
                scope.refs[names[i]] = self._block_call(site, frozen, reuse)
            elif "reuse" in layer:
                scope.refs[names[i]] = self._reuse(site, prefix)
            else:
                scope.refs[names[i]] = self._call(site, frozen, reuse, where)
        out_names = output_specs(outputs_spec, names, scope, self.ctx, err_where)
        out_refs, losses = [], []
        for name, idx in out_names:
            used.add(name)
            found = scope.refs[name]
            if idx >= len(found):
                raise UserError(f"{self.ctx}: outputs: {name!r} has no output {idx}")
            out_refs.append(found[idx])
            layer = layers[local[name]] if name in local else {}
            losses.append(self._loss(layer, labels[local[name]] if name in local else self.ctx))
        for i, name in enumerate(names):
            if name not in used:
                self.warnings.append(
                    f"{labels[i]}: its output is never used and it is not a model output"
                )
        return out_refs, losses

    def _shape_of(self, ref: Ref) -> Shape:
        src, k = ref
        if src < 0:
            return self.input_shapes[-1 - src]
        stats = self.nodes[src].stats
        return stats.output_shape if k == 0 else stats.extra_outputs[k - 1]

    def _loss(self, layer: Mapping[str, Any], label: str) -> str:
        loss = layer.get("loss")
        if loss is None:
            act = layer.get("activation")
            return "categorical_crossentropy" if act == "softmax" else "mse"
        if loss not in LOSSES:
            raise UserError(f"{label}: loss: must be one of {', '.join(LOSSES)}, got {loss!r}")
        return str(loss)


def sequential_network(
    model_input: ModelInput, layers: list[Any], ctx: str, prefix: str, attention: str
) -> Network:
    """A stack: every layer reads the one before; phases keep the "Type (layers[i])" labels."""
    builder = GraphBuilder(ctx, attention, named=False)
    builder.input_shapes = [model_input.shape]
    scope = Scope({"<input>": [(-1, 0)]}, "<input>")
    outputs, losses = builder.graph(
        layers, None, scope, "", "layers", frozen=False, reuse=None, err_where=f"{prefix}layers"
    )
    return Network((model_input,), tuple(builder.nodes), tuple(outputs), (), tuple(losses))
