"""The walk over one graph and what each entry of its layers list adds: a layer call (a
node), a reuse of a layer (a second node on the same weights), or a block call (its
sub-graph, walked again with its names prefixed; a reuse of a block call expands the
block again on the first call's weights).

The walk and the block calls are together because they recurse into each other; what
is apart (build.py) is reading a model's inputs, blocks and outputs. Shared weights
and nested blocks are where a model's node count, its trainable parameters and the
limits below are decided.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gputui.core.errors import UserError
from gputui.fit.graph.layer_args import LayerArgError
from gputui.fit.graph.limits import MAX_LAYERS, too_many_layers
from gputui.fit.graph.names import (
    Scope,
    Site,
    input_specs,
    layer_label,
    layer_names,
    output_specs,
    phase_label,
)
from gputui.fit.graph.network import Node, Ref, Shape
from gputui.fit.graph.order import graph_order
from gputui.fit.graph.registry import analyse_layer, freeze
from gputui.fit.graph.stats import LayerStats
from gputui.fit.graph.syntax import listed, only_keys, parse_shape

MAX_BLOCK_DEPTH = 16
_CALL_KEYS = {"name", "inputs", "block", "trainable", "loss"}
_REUSE_KEYS = {"name", "inputs", "reuse", "loss"}
_BLOCK_KEYS = {"inputs", "layers", "outputs"}
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


class LayerCalls:
    """The nodes built so far, the walk over one graph (`graph`, which a block call
    re-enters for its sub-graph) and how each entry adds to the nodes; build.py's
    GraphBuilder reads a model's inputs, blocks and outputs around it."""

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
            raise too_many_layers(f"{self.ctx}: {err_where}", None if self.nodes else len(layers))
        names = layer_names(layers, scope, self.ctx, err_where)
        labels = [
            layer_label(layers[i], names[i], prefix, err_where, i, self.ctx, self.named)
            for i in range(len(layers))
        ]
        local = {n: i for i, n in enumerate(names)}
        known = scope.refs.keys() | local.keys()
        specs = [
            input_specs(layers, i, names, scope, labels[i], self.named, known)
            for i in range(len(layers))
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

    def _call(self, site: Site, frozen: bool, reuse: str | None, where: str) -> list[Ref]:
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
                phase_label(stats.type, layer, self.named, where, i, full),
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
            raise too_many_layers(f"{self.ctx}: layers (blocks expanded)")
        pos = len(self.nodes)
        self.nodes.append(node)
        self.by_name[node.name] = pos
        return [(pos, k) for k in range(1 + len(node.stats.extra_outputs))]

    def _reuse(self, site: Site, prefix: str) -> list[Ref]:
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

    def _shared(self, site: Site, owner_name: str) -> list[Ref]:
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
            phase_label(stats.type, site.layer, True, "", site.i, site.full),
            stats,
            tuple(site.refs),
            tuple(shapes),
            owner.weights,
            owner.weight_trainable,
            owner.raw,
        )
        return self._add(node)

    def _block_call(self, site: Site, frozen: bool, reuse: str | None) -> list[Ref]:
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

    def _expand(self, block: str, site: Site, frozen: bool, reuse: str | None) -> list[Ref]:
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
        scope = Scope({n: [r] for n, r in zip(names, refs, strict=True)}, names[0])
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
