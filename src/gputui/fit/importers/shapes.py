"""Per-sample input shapes a user gives for a model file's variable (None) dimensions.

Two spellings, one meaning: the command line's `--input-shape NAME=40,71`
(repeatable) and a sidecar table's `input_shapes = { NAME = [40, 71] }`. Both
are validated here, where the text enters, so the importer gets plain ints.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gputui.errors import UserError
from gputui.textsafe import visible

InputShapes = dict[str, list[int]]


def parse_input_shape_flags(values: Iterable[str], flag: str = "--input-shape") -> InputShapes:
    """`["enc=40,71", "dec=50,93"]` -> `{"enc": [40, 71], "dec": [50, 93]}`."""
    shapes: InputShapes = {}
    for value in values:
        name, sep, dims = value.partition("=")
        name = name.strip()
        try:
            shape = [int(d) for d in dims.split(",")] if sep else []
        except ValueError:
            shape = []
        if not name or not shape or any(d < 1 for d in shape):
            raise UserError(
                f"{flag} {visible(value)!r}: expected NAME=D1,D2,... with positive integers, "
                "e.g. encoder_inputs=40,71"
            )
        if name in shapes:
            raise UserError(f"{flag}: input {visible(name)!r} is given twice")
        shapes[name] = shape
    return shapes


def parse_input_shapes_table(value: Any, where: str) -> InputShapes:
    """A sidecar's `input_shapes = { NAME = [D1, D2, ...] }`; `where` names file and model."""
    if not isinstance(value, dict):
        raise UserError(
            f"{where}: input_shapes: must be a table like {{ encoder_inputs = [40, 71] }}"
        )
    shapes: InputShapes = {}
    for name, dims in value.items():
        if (
            not isinstance(dims, list)
            or not dims
            or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims)
        ):
            raise UserError(
                f"{where}: input_shapes.{visible(str(name))}: must be a list of positive "
                f"integers, got {visible(repr(dims))}"
            )
        shapes[str(name)] = list(dims)
    return shapes
