"""A models-file entry that points at a Keras file: `{ name = "x", keras = "m.json", ... }`.

The Keras file says what the model is; the sidecar says what the file cannot:
batch size, optimizer, mode, the sizes of variable dimensions, and whether
custom layers may be skipped. The result is one functional model table, parsed
by the models file's parser like any other (which validates batch_size,
optimizer and mode with its usual messages).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from gputui.errors import UserError
from gputui.fit.importers.keras import KerasModel, load_keras
from gputui.fit.importers.shapes import parse_input_shapes_table
from gputui.textsafe import visible

SIDECAR_KEYS = frozenset(
    {"name", "keras", "batch_size", "optimizer", "mode", "input_shapes", "skip_unknown"}
)
# Passed on to the models-file parser as they are.
_PASSED_ON = ("batch_size", "optimizer", "mode")


def is_keras_sidecar(raw: Mapping[str, Any]) -> bool:
    """True for a [[model]] table that names a Keras file instead of listing layers."""
    return "keras" in raw


def load_keras_sidecar(raw: Mapping[str, Any], where: str, base_dir: Path) -> KerasModel:
    """The Keras file a sidecar names, as a table carrying the sidecar's own fields.

    `where` names the models file in errors; `base_dir` is its folder, against
    which a relative `keras` path is resolved (so a models file can travel with
    its Keras files).
    """
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise UserError(f"{where}: model: name: required, a non-empty string")
    ctx = f"{where}: model {visible(name)!r}"
    for key in raw:
        if key not in SIDECAR_KEYS:
            raise UserError(
                f"{ctx}: {visible(str(key))}: unknown field for a Keras model "
                f"(allowed: {', '.join(sorted(SIDECAR_KEYS))})"
            )
    path_value = raw["keras"]
    if not isinstance(path_value, str) or not path_value.strip():
        raise UserError(f"{ctx}: keras: must be the path of a Keras .json or .keras file")
    path = Path(path_value).expanduser()
    if not path.is_absolute():
        path = base_dir / path
    if not path.exists():
        raise UserError(f"{ctx}: keras: {visible(path_value)!r}: no such file")
    shapes = parse_input_shapes_table(raw["input_shapes"], ctx) if "input_shapes" in raw else {}
    skip = raw.get("skip_unknown", False)
    if not isinstance(skip, bool):
        raise UserError(f"{ctx}: skip_unknown: must be true or false, got {visible(repr(skip))}")
    model = load_keras(
        path,
        name=name,
        input_shapes=shapes,
        skip_unknown=skip,
        where=f"{ctx}: keras {visible(path_value)!r}",
    )
    table = {**model.table, **{k: raw[k] for k in _PASSED_ON if k in raw}}
    return replace(model, table=table)
