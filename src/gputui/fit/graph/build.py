"""From layer tables to a Network: name resolution, graph order, blocks and shared layers.

One builder serves both syntaxes: a sequential stack is a graph where each layer
reads the one before (the default when a layer names no `inputs`), so both are
estimated by the same walk. A functional model names its inputs, may use
`"NAME:i"` for output i of a layer with several outputs, `reuse` to call a layer
again with the same weights, and `block` to call a sub-graph from `blocks`.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gputui.core.errors import UserError
from gputui.fit.graph.args import LayerArgError
from gputui.fit.graph.network import ModelInput, Network, Node, Ref, Shape
from gputui.fit.graph.registry import analyse_layer, freeze, is_known
from gputui.fit.graph.stats import LayerStats
from gputui.fit.graph.syntax import (
    REF_SYNTAX,
    listed,
    name_list,
    only_keys,
    parse_ref,
    parse_shape,
    snake,
)

MAX_LAYERS = 5000  # layer calls per model, blocks expanded
MAX_BLOCK_DEPTH = 16
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
_CALL_KEYS = {"name", "inputs", "block", "trainable", "loss"}
_REUSE_KEYS = {"name", "inputs", "reuse", "loss"}
_INPUT_KEYS = {"name", "shape", "dtype"}
_BLOCK_KEYS = {"inputs", "layers", "outputs"}


@dataclass(frozen=True, slots=True)
class _Site:
    """One entry of a layers list being built: the table, where it stands, what it reads."""

    layer: Mapping[str, Any]
    i: int  # position in its layers list
    full: str  # its name with the block calls' prefixes
    refs: list[Ref]
    shapes: list[Shape]
    label: str  # how errors name it


@dataclass(slots=True)
class _Scope:
    """Names visible inside one graph (the model, or one block call)."""

    refs: dict[str, list[Ref]]
    first_input: str | None


class GraphBuilder:
    def __init__(self, ctx: str, attention: str = "auto", *, named: bool = True) -> None:
        self.ctx = ctx
        self.attention = attention
        self.named = named  # functional syntax: names and inputs allowed, shown in labels
        self.nodes: list[Node] = []
        self.by_name: dict[str, int] = {}
        self.warnings: list[str] = []
        self.blocks: Mapping[str, Any] = {}
        self.block_stack: list[str] = []
        self.input_shapes: list[Shape] = []
        # block call name -> (block, frozen, call name): what a reuse of the call expands
        self.calls: dict[str, tuple[str, bool, str]] = {}

    # ------------------------------------------------------------ functional

    def model(self, raw: Mapping[str, Any]) -> Network:
        inputs = self._model_inputs(raw.get("inputs"))
        self.input_shapes = [i.shape for i in inputs]
        blocks = raw.get("blocks", {})
        if not isinstance(blocks, dict) or not all(isinstance(b, dict) for b in blocks.values()):
            raise UserError(f"{self.ctx}: blocks: must be tables like [model.blocks.NAME]")
        self.blocks = blocks
        scope = _Scope({i.name: [(-1 - k, 0)] for k, i in enumerate(inputs)}, inputs[0].name)
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
        scope: _Scope,
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
        names = self._names(layers, scope, err_where)
        labels = [
            self._label(layers[i], names[i], prefix, err_where, i) for i in range(len(layers))
        ]
        local = {n: i for i, n in enumerate(names)}
        specs = [self._input_specs(layers, i, names, scope, labels[i]) for i in range(len(layers))]
        order = self._order(layers, specs, local, labels)
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
            site = _Site(layer, i, prefix + names[i], refs, shapes, labels[i])
            if "block" in layer:
                scope.refs[names[i]] = self._block_call(site, frozen, reuse)
            elif "reuse" in layer:
                scope.refs[names[i]] = self._reuse(site, prefix)
            else:
                scope.refs[names[i]] = self._call(site, frozen, reuse, where)
        out_names = self._outputs(outputs_spec, names, scope, err_where)
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

    def _names(self, layers: list[Any], scope: _Scope, err_where: str) -> list[str]:
        explicit: dict[str, int] = {}
        for i, layer in enumerate(layers):
            name = layer.get("name")
            if name is None:
                continue
            where = f"{self.ctx}: {err_where}[{i}]"
            if not isinstance(name, str) or not name or ":" in name or "/" in name:
                raise UserError(f"{where}: name: must be a non-empty string without ':' or '/'")
            if name in explicit or name in scope.refs:
                raise UserError(f"{where} {name!r}: name: {name!r} is used twice")
            explicit[name] = i
        taken = set(explicit) | set(scope.refs)
        counts: dict[str, int] = {}
        out = []
        for layer in layers:
            name = layer.get("name")
            if name is None:
                base = snake(str(layer.get("type") or layer.get("block") or "layer"))
                while True:
                    n = counts.get(base, 0)
                    counts[base] = n + 1
                    name = base if n == 0 else f"{base}_{n}"
                    if name not in taken:
                        break
                taken.add(name)
            out.append(str(name))
        return out

    def _label(self, layer: Mapping[str, Any], name: str, prefix: str, where: str, i: int) -> str:
        kind = layer.get("type")
        kind_text = kind if is_known(kind) else "?"
        if "block" in layer:
            kind_text = f"block {layer.get('block')!s}"
        elif "reuse" in layer:
            kind_text = f"reuse of {layer.get('reuse')!s}"
        if self.named and "name" in layer:
            return f"{self.ctx}: {where}[{i}] {prefix + name!r} ({kind_text})"
        return f"{self.ctx}: {where}[{i}] ({kind_text})"

    def _input_specs(
        self, layers: list[Any], i: int, names: list[str], scope: _Scope, label: str
    ) -> list[tuple[str, int]]:
        layer = layers[i]
        value = layer.get("inputs")
        if value is None:
            if i > 0:
                return [(names[i - 1], 0)]
            if scope.first_input is None:
                raise UserError(f"{label}: inputs: required (nothing comes before it)")
            return [(scope.first_input, 0)]
        if not self.named:
            raise UserError(f'{label}: inputs: only a kind = "functional" model names inputs')
        listed = name_list(value)
        if listed is None:
            raise UserError(f'{label}: inputs: must be a list of names like ["conv", "lstm:1"]')
        known = set(scope.refs) | set(names)
        out = []
        for v in listed:
            ref = parse_ref(v)
            if ref is None:
                raise UserError(f"{label}: inputs: {v!r}: {REF_SYNTAX}")
            name, idx = ref
            if name not in known:
                choices = ", ".join(sorted(known))
                raise UserError(f"{label}: inputs: unknown input {name!r} (known: {choices})")
            if name == names[i]:
                raise UserError(f"{label}: inputs: a layer cannot read its own output")
            out.append((name, idx))
        return out

    def _order(
        self,
        layers: list[Any],
        specs: list[list[tuple[str, int]]],
        local: dict[str, int],
        labels: list[str],
    ) -> list[int]:
        """Graph order, ties in file order (Kahn's algorithm on a heap of file positions)."""
        deps = [{local[n] for n, _ in spec if n in local} for spec in specs]
        for i, layer in enumerate(layers):
            target = layer.get("reuse")
            if isinstance(target, str) and target in local:
                deps[i].add(local[target])  # the reused layer is built at its first call
        waiting = [len(d) for d in deps]
        users: list[list[int]] = [[] for _ in layers]
        for i, d in enumerate(deps):
            for j in d:
                users[j].append(i)
        ready = [i for i, w in enumerate(waiting) if w == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            i = heapq.heappop(ready)
            order.append(i)
            for u in users[i]:
                waiting[u] -= 1
                if waiting[u] == 0:
                    heapq.heappush(ready, u)
        if len(order) != len(layers):
            stuck = min(i for i, w in enumerate(waiting) if w > 0)
            raise UserError(f"{labels[stuck]}: inputs: the graph has a cycle through this layer")
        return order

    def _shape_of(self, ref: Ref) -> Shape:
        src, k = ref
        if src < 0:
            return self.input_shapes[-1 - src]
        stats = self.nodes[src].stats
        return stats.output_shape if k == 0 else stats.extra_outputs[k - 1]

    def _call(self, site: _Site, frozen: bool, reuse: str | None, where: str) -> list[Ref]:
        layer, i, full, label = site.layer, site.i, site.full, site.label
        if reuse is not None:
            return self._shared(site, reuse + full.rsplit("/", 1)[-1])
        for key in ("reuse", "block"):
            if key in layer:
                raise UserError(f"{label}: {key}: not allowed together with type")
        if not self.named and "loss" in layer:
            raise UserError(f'{label}: loss: only a kind = "functional" model names losses')
        stats = self._analyse(i, layer, site.shapes, label)
        if frozen:
            stats = freeze(stats)
        return self._add(
            Node(
                full,
                _phase_label(stats.type, layer, self.named, where, i, full),
                stats,
                tuple(site.refs),
                tuple(site.shapes),
                full,
                stats.trainable_params,
                layer,
            )
        )

    def _analyse(
        self, i: int, layer: Mapping[str, Any], shapes: list[Shape], label: str
    ) -> LayerStats:
        """The layer's figures on these input shapes; a bad argument named with its layer."""
        try:
            return analyse_layer(i, layer, tuple(shapes), attention=self.attention)
        except LayerArgError as exc:
            raise UserError(f"{label}: {exc.field}: {exc.reason}") from None

    def _add(self, node: Node) -> list[Ref]:
        if len(self.nodes) >= MAX_LAYERS:
            raise UserError(
                f"{self.ctx}: more than {MAX_LAYERS} layers; at most {MAX_LAYERS} are checked"
            )
        pos = len(self.nodes)
        self.nodes.append(node)
        self.by_name[node.name] = pos
        return [(pos, k) for k in range(1 + len(node.stats.extra_outputs))]

    def _reuse(self, site: _Site, prefix: str) -> list[Ref]:
        layer, label = site.layer, site.label
        only_keys(layer, _REUSE_KEYS, f"{label}: ", f"a reuse takes only {listed(_REUSE_KEYS)}")
        target = layer.get("reuse")
        owner = prefix + str(target)
        if not isinstance(target, str) or owner not in self.by_name and owner not in self.calls:
            raise UserError(f"{label}: reuse: {target!r} is not a layer of this graph")
        if owner in self.calls:
            block, frozen, call_prefix = self.calls[owner]
            return self._expand(block, site, frozen, call_prefix + "/")
        return self._shared(site, owner)

    def _shared(self, site: _Site, owner_name: str) -> list[Ref]:
        """A second call of `owner_name`'s layer: same weights, new activations."""
        shapes, label = site.shapes, site.label
        owner = self.nodes[self.by_name[owner_name]]
        stats = self._analyse(site.i, owner.raw, shapes, label)
        if stats.params != owner.stats.params:
            raise UserError(
                f"{label}: inputs: {tuple(shapes)} would need other weights than "
                f"{owner_name!r} has (its inputs were {owner.input_shapes})"
            )
        stats = replace(
            stats,
            trainable_params=0,
            non_trainable_params=0,
            matmul_params=0,  # autocast caches the 16-bit copy of a weight per step
            saves_input_if_trainable=stats.saves_input_if_trainable and owner.trains,
        )
        node = Node(
            site.full,
            _phase_label(stats.type, site.layer, True, "", site.i, site.full),
            stats,
            tuple(site.refs),
            tuple(shapes),
            owner.weights,
            owner.weight_trainable,
            owner.raw,
        )
        return self._add(node)

    def _block_call(self, site: _Site, frozen: bool, reuse: str | None) -> list[Ref]:
        layer, full, label = site.layer, site.full, site.label
        if not self.named:
            raise UserError(f'{label}: block: only a kind = "functional" model calls blocks')
        only_keys(layer, _CALL_KEYS, f"{label}: ", f"a block call takes only {listed(_CALL_KEYS)}")
        block = layer.get("block")
        if not isinstance(block, str) or block not in self.blocks:
            known = ", ".join(sorted(self.blocks)) or "none"
            raise UserError(f"{label}: block: unknown block {block!r} (blocks: {known})")
        trainable = layer.get("trainable", True)
        if not isinstance(trainable, bool):
            raise UserError(f"{label}: trainable: must be true or false, got {trainable!r}")
        frozen = frozen or not trainable
        owner = None
        if reuse is not None:
            owner = reuse + full.rsplit("/", 1)[-1] + "/"
        self.calls[full] = (block, frozen, full)
        return self._expand(block, site, frozen, owner)

    def _expand(self, block: str, site: _Site, frozen: bool, reuse: str | None) -> list[Ref]:
        full, refs, shapes, label = site.full, site.refs, site.shapes, site.label
        if block in self.block_stack:
            chain = " -> ".join([*self.block_stack[self.block_stack.index(block) :], block])
            raise UserError(f"{label}: block: {block!r} calls itself ({chain})")
        if len(self.block_stack) >= MAX_BLOCK_DEPTH:
            raise UserError(
                f"{label}: block: blocks nest deeper than {MAX_BLOCK_DEPTH} levels at {block!r}"
            )
        table = self.blocks[block]
        where = f"blocks.{block}"
        only_keys(
            table,
            _BLOCK_KEYS,
            f"{self.ctx}: {where}.",
            f"unknown field (allowed: {listed(_BLOCK_KEYS)})",
        )
        declared = table.get("inputs")
        if not isinstance(declared, list) or not declared:
            raise UserError(f"{self.ctx}: {where}.inputs: required, a list of input names")
        names = []
        for k, item in enumerate(declared):
            name = item.get("name") if isinstance(item, dict) else item
            if not isinstance(name, str) or not name or ":" in name or "/" in name:
                raise UserError(
                    f"{self.ctx}: {where}.inputs[{k}]: must be a name (without ':' or '/') "
                    "or { name, shape }"
                )
            if name in names:
                raise UserError(f"{self.ctx}: {where}.inputs[{k}]: name {name!r} is used twice")
            if isinstance(item, dict) and "shape" in item:
                want = parse_shape(item["shape"], f"{self.ctx}: {where}.inputs[{k}]", "shape")
                if k < len(shapes) and want != shapes[k]:
                    raise UserError(
                        f"{label}: inputs: input {k} has shape {shapes[k]}, block {block!r} "
                        f"declares {want}"
                    )
            names.append(name)
        if len(names) != len(refs):
            raise UserError(
                f"{label}: inputs: block {block!r} takes {len(names)} input(s), got {len(refs)}"
            )
        scope = _Scope({n: [r] for n, r in zip(names, refs, strict=True)}, names[0])
        self.block_stack.append(block)
        outs, _ = self.graph(
            table.get("layers"),
            table.get("outputs"),
            scope,
            full + "/",
            f"{where}.layers",
            frozen=frozen,
            reuse=reuse,
        )
        self.block_stack.pop()
        return outs

    def _outputs(
        self, spec: Any, names: list[str], scope: _Scope, err_where: str
    ) -> list[tuple[str, int]]:
        if spec is None:
            return [(names[-1], 0)]
        listed = name_list(spec)
        if listed is None:
            raise UserError(f"{self.ctx}: outputs: must be a list of layer names")
        out = []
        for s in listed:
            ref = parse_ref(s)
            if ref is None:
                raise UserError(f"{self.ctx}: outputs: {s!r} ({err_where}): {REF_SYNTAX}")
            if ref[0] not in scope.refs:
                raise UserError(f"{self.ctx}: outputs: unknown output {s!r} ({err_where})")
            out.append(ref)
        return out

    def _loss(self, layer: Mapping[str, Any], label: str) -> str:
        loss = layer.get("loss")
        if loss is None:
            act = layer.get("activation")
            return "categorical_crossentropy" if act == "softmax" else "mse"
        if loss not in LOSSES:
            raise UserError(f"{label}: loss: must be one of {', '.join(LOSSES)}, got {loss!r}")
        return str(loss)


def _phase_label(
    kind: str, layer: Mapping[str, Any], named: bool, where: str, i: int, full: str
) -> str:
    """How phases name a node: "Conv2D (layers[1])", or with its name in a graph."""
    place = f" ({where}[{i}])" if where else ""
    if named and ("name" in layer or "/" in full):
        return f"{kind} {full!r}{place}"
    return f"{kind}{place}"


def sequential_network(
    model_input: ModelInput, layers: list[Any], ctx: str, prefix: str, attention: str
) -> Network:
    """A stack: every layer reads the one before; phases keep the "Type (layers[i])" labels."""
    builder = GraphBuilder(ctx, attention, named=False)
    builder.input_shapes = [model_input.shape]
    scope = _Scope({"<input>": [(-1, 0)]}, "<input>")
    outputs, losses = builder.graph(
        layers, None, scope, "", "layers", frozen=False, reuse=None, err_where=f"{prefix}layers"
    )
    return Network((model_input,), tuple(builder.nodes), tuple(outputs), (), tuple(losses))
