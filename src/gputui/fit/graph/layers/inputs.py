"""A model's input as its layer tables declare it: InputLayer, Keras 2's `input_shape`,
`input_dim` and `batch_size`, every form checked against the others."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gputui.fit.graph.layer_args import MAX_DIM, Args, LayerArgError
from gputui.fit.graph.layers.common import Shape
from gputui.fit.graph.stats import LayerStats


def _shape_arg(value: Any, field: str, skip_batch: bool = False) -> Shape:
    items = value[1:] if skip_batch and isinstance(value, list) and value else value
    if skip_batch and isinstance(value, list) and value:
        first = value[0]
        if first is not None and (isinstance(first, bool) or not isinstance(first, int)):
            raise LayerArgError(field, f"must be a list [batch, *shape], got {value!r}")
    if (
        not isinstance(value, list)
        or not isinstance(items, list)
        or not items
        or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 < d <= MAX_DIM for d in items
        )
    ):
        raise LayerArgError(
            field,
            f"must be a list of positive integers (at most {MAX_DIM}), got {value!r}",
        )
    return tuple(items)


def declared_input(raw: Mapping[str, Any]) -> tuple[str, Shape] | None:
    """The input shape a layer table declares (Keras 2 style or InputLayer), with its field.

    A table may give it more than once (`shape` and Keras 2's `input_shape`); every
    form must agree, else the disagreement is an error naming both fields.
    """
    kind = raw.get("type")
    found: list[tuple[str, Shape]] = []
    fields = ("shape", "batch_shape", "input_shape", "batch_input_shape")
    for field in fields if kind == "InputLayer" else fields[2:]:
        if field in raw:
            found.append(
                (field, _shape_arg(raw[field], field, skip_batch=field.startswith("batch")))
            )
    if "input_dim" in raw and kind != "Embedding":
        dim = raw["input_dim"]
        if isinstance(dim, bool) or not isinstance(dim, int) or not 0 < dim <= MAX_DIM:
            raise LayerArgError("input_dim", f"must be a positive integer, got {dim!r}")
        found.append(("input_dim", (dim,)))
    for field, shape in found[1:]:
        if shape != found[0][1]:
            raise LayerArgError(
                field, f"{list(shape)} differs from {found[0][0]} {list(found[0][1])}"
            )
    return found[0] if found else None


def declared_batch(raw: Mapping[str, Any]) -> tuple[str, int] | None:
    """A batch size the layer fixes (the first entry of batch_shape, Keras 2's batch_size)."""
    for field in ("batch_shape", "batch_input_shape"):
        value = raw.get(field)
        first = value[0] if isinstance(value, list) and value else None
        if isinstance(first, int) and not isinstance(first, bool):
            return field, first
    size = raw.get("batch_size")
    if size is not None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise LayerArgError("batch_size", f"must be a positive integer, got {size!r}")
        return "batch_size", size
    return None


def input_layer(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(
        raw,
        {"shape", "batch_shape", "batch_input_shape", "sparse", "ragged", "input_tensor"}
        | {"optional", "input_shape"},
        frozenset(),
    )
    for name in ("sparse", "ragged", "optional"):
        a.flag(name, False)
    if a.has("input_tensor"):
        raise LayerArgError("input_tensor", "is not supported in a models file")
    declared_input(raw)
    return LayerStats(0, "", shape, 0, 0, 0, output_is_view=True)
