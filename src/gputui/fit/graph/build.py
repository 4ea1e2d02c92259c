"""From layer tables to a Network: a model's inputs, blocks and outputs around the walk.

One builder serves both syntaxes: a sequential stack is a graph where each layer
reads the one before (the default when a layer names no `inputs`), so both are
estimated by the same walk. A functional model names its inputs, may use
`"NAME:i"` for output i of a layer with several outputs, `reuse` to call a layer
again with the same weights, and `block` to call a sub-graph from `blocks`.
Name resolution is in names.py, the graph order in order.py, the walk over one graph
and what each entry adds (layer calls, shared layers, block calls) in calls.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gputui.core.errors import UserError
from gputui.fit.graph.calls import LayerCalls
from gputui.fit.graph.names import Scope
from gputui.fit.graph.network import ModelInput, Network, Ref
from gputui.fit.graph.syntax import listed, only_keys, parse_shape

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
