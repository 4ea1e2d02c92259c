"""--input-shape flags and a sidecar's input_shapes table, validated where they enter."""

from __future__ import annotations

import pytest

from gputui.errors import UserError
from gputui.fit.importers.shapes import parse_input_shape_flags, parse_input_shapes_table


def test_flags() -> None:
    assert parse_input_shape_flags(["enc=40,71", " dec = 50,93"]) == {
        "enc": [40, 71],
        "dec": [50, 93],
    }
    assert parse_input_shape_flags([]) == {}


@pytest.mark.parametrize("value", ["enc", "enc=", "=40", "enc=40,x", "enc=0,71", "enc=40,,71"])
def test_bad_flag(value: str) -> None:
    with pytest.raises(UserError) as info:
        parse_input_shape_flags([value])
    assert str(info.value).startswith(f"--input-shape {value!r}: expected NAME=D1,D2,...")


def test_flag_given_twice() -> None:
    with pytest.raises(UserError, match="input 'enc' is given twice"):
        parse_input_shape_flags(["enc=1", "enc=2"])


def test_table() -> None:
    assert parse_input_shapes_table({"enc": [40, 71]}, "m.toml: model 'x'") == {"enc": [40, 71]}


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ([40, 71], "input_shapes: must be a table"),
        ({"enc": [40, 0]}, "input_shapes.enc: must be a list of positive integers, got [40, 0]"),
        ({"enc": 40}, "input_shapes.enc: must be a list"),
        ({"enc": [True]}, "input_shapes.enc: must be a list"),
    ],
)
def test_bad_table(value: object, fragment: str) -> None:
    with pytest.raises(UserError) as info:
        parse_input_shapes_table(value, "m.toml: model 'x'")
    assert str(info.value).startswith("m.toml: model 'x': ") and fragment in str(info.value)
