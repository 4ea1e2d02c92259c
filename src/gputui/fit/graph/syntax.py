"""What the names, references and shapes of a graph table may be (models TOML, Keras).

A reference names a layer, an input or a block call and, for a node with several
outputs, which one: `"NAME"` or `"NAME:i"`. The index is written as Keras prints it,
a small decimal with no sign and no leading zero; anything else (`NAME:-1`,
`NAME:0:0`, `NAME:`, `NAME:01`, a 20-digit index) is refused rather than read as
some other output. A per-sample shape is positive integers, each at most MAX_DIM,
holding at most MAX_ELEMENTS values.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from gputui.core.errors import UserError
from gputui.fit.graph.layer_args import MAX_DIM, MAX_ELEMENTS
from gputui.fit.graph.network import Shape


def snake(name: str) -> str:
    """Keras' to_snake_case: the default layer name for a class ("Conv2D" -> "conv2d")."""
    step = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", step).lower()


# NAME or NAME:i, i the output's index in decimal: no sign, no leading zero, no other
# digits than 0-9, at most 6 of them (no layer has a million outputs).
_REF = re.compile(r"([^:]+)(?::(0|[1-9][0-9]{0,5}))?")
REF_SYNTAX = (
    "a reference is NAME, or NAME:i for output i (a small decimal index: 0, 1, 2, ... "
    "without sign or leading zeros)"
)


def parse_ref(text: str) -> tuple[str, int] | None:
    """(name, output index) of a reference such as "lstm:1"; None when it is malformed."""
    found = _REF.fullmatch(text)
    if found is None:
        return None
    return found.group(1), int(found.group(2) or 0)


def listed(keys: set[str]) -> str:
    return ", ".join(sorted(keys))


def only_keys(table: Mapping[str, Any], allowed: set[str], where: str, why: str) -> None:
    """Every key of `table` is one of `allowed`; the first that is not is named."""
    for key in table:
        if key not in allowed:
            raise UserError(f"{where}{key}: {why}")


def name_list(value: Any) -> list[str] | None:
    """A name, or a non-empty list of names, as a list; None when it is neither."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    return None


def parse_shape(value: Any, where: str, field: str) -> Shape:
    if (
        not isinstance(value, list)
        or not value
        or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 < d <= MAX_DIM for d in value
        )
    ):
        raise UserError(
            f"{where}: {field}: must be a list of positive integers (at most {MAX_DIM}), "
            f"got {value!r}"
        )
    check_elements(value, where, field)
    return tuple(value)


def check_elements(shape: list[int], where: str, field: str) -> None:
    """A per-sample shape holds at most MAX_ELEMENTS values (each dimension may be in bounds
    while their product is not)."""
    if math.prod(shape) > MAX_ELEMENTS:
        raise UserError(
            f"{where}: {field}: {list(shape)} holds {math.prod(shape):.3g} values per sample; "
            f"at most {MAX_ELEMENTS:.3g}"
        )
