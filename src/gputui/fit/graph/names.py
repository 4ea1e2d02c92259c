"""Name resolution in a layers list: every layer's name (given or made from its type),
what each one reads, the graph's outputs, and how errors and phases name a layer.

Why apart from the builder: these are the rules a user writes against ("NAME:i",
the layer before as the default input, names unique in their scope), and they
depend only on the tables, never on shapes or stats.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Any

from gputui.core.errors import UserError
from gputui.fit.graph.network import Ref, Shape
from gputui.fit.graph.registry import is_known
from gputui.fit.graph.syntax import REF_SYNTAX, name_list, parse_ref, snake


@dataclass(frozen=True, slots=True)
class Site:
    """One entry of a layers list being built: the table, where it stands, what it reads."""

    layer: Mapping[str, Any]
    i: int  # position in its layers list
    full: str  # its name with the block calls' prefixes
    refs: list[Ref]
    shapes: list[Shape]
    label: str  # how errors name it


@dataclass(slots=True)
class Scope:
    """Names visible inside one graph (the model, or one block call)."""

    refs: dict[str, list[Ref]]
    first_input: str | None


def layer_names(layers: list[Any], scope: Scope, ctx: str, err_where: str) -> list[str]:
    """Every layer's name: its own (unique in the scope), else snake_case of its type
    numbered past the names taken (Keras' "dense", "dense_1", ...)."""
    explicit: dict[str, int] = {}
    for i, layer in enumerate(layers):
        name = layer.get("name")
        if name is None:
            continue
        where = f"{ctx}: {err_where}[{i}]"
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


def layer_label(
    layer: Mapping[str, Any], name: str, prefix: str, where: str, i: int, ctx: str, named: bool
) -> str:
    """How errors name a layer: its place, its name in a functional model, its kind."""
    kind = layer.get("type")
    kind_text = kind if is_known(kind) else "?"
    if "block" in layer:
        kind_text = f"block {layer.get('block')!s}"
    elif "reuse" in layer:
        kind_text = f"reuse of {layer.get('reuse')!s}"
    if named and "name" in layer:
        return f"{ctx}: {where}[{i}] {prefix + name!r} ({kind_text})"
    return f"{ctx}: {where}[{i}] ({kind_text})"


def input_specs(
    layers: list[Any],
    i: int,
    names: list[str],
    scope: Scope,
    label: str,
    named: bool,
    known: Set[str],
) -> list[tuple[str, int]]:
    """What layer `i` reads, as (name, output index): its `inputs`, else the layer before
    (the first layer: the scope's first input). `known` is the scope's names and the
    graph's, made once per graph by the caller (per layer it would cost the graph's size)."""
    layer = layers[i]
    value = layer.get("inputs")
    if value is None:
        if i > 0:
            return [(names[i - 1], 0)]
        if scope.first_input is None:
            raise UserError(f"{label}: inputs: required (nothing comes before it)")
        return [(scope.first_input, 0)]
    if not named:
        raise UserError(f'{label}: inputs: only a kind = "functional" model names inputs')
    listed = name_list(value)
    if listed is None:
        raise UserError(f'{label}: inputs: must be a list of names like ["conv", "lstm:1"]')
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


def output_specs(
    spec: Any, names: list[str], scope: Scope, ctx: str, err_where: str
) -> list[tuple[str, int]]:
    """A graph's outputs as (name, output index): its `outputs`, else its last layer."""
    if spec is None:
        return [(names[-1], 0)]
    listed = name_list(spec)
    if listed is None:
        raise UserError(f"{ctx}: outputs: must be a list of layer names")
    out = []
    for s in listed:
        ref = parse_ref(s)
        if ref is None:
            raise UserError(f"{ctx}: outputs: {s!r} ({err_where}): {REF_SYNTAX}")
        if ref[0] not in scope.refs:
            raise UserError(f"{ctx}: outputs: unknown output {s!r} ({err_where})")
        out.append(ref)
    return out


def phase_label(
    kind: str, layer: Mapping[str, Any], named: bool, where: str, i: int, full: str
) -> str:
    """How phases name a node: "Conv2D (layers[1])", or with its name in a graph."""
    place = f" ({where}[{i}])" if where else ""
    if named and ("name" in layer or "/" in full):
        return f"{kind} {full!r}{place}"
    return f"{kind}{place}"
