"""Functional graphs in the models TOML: what a reference, a name and a block chain may be."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from gputui.cli import main
from gputui.core.errors import UserError
from gputui.fit.graph.calls import MAX_BLOCK_DEPTH
from gputui.fit.importers.modelsfile import ModelSpec, parse_models

SYNTAX = "a reference is NAME, or NAME:i for output i"
LSTM = '{ name = "l", type = "LSTM", units = 4, return_state = true, inputs = ["seq"] }'
INPUTS = '[ { name = "x", shape = [4] }, { name = "seq", shape = [5, 3] } ]'


def graph(layers: str, outputs: str | None = None, extra: str = "") -> ModelSpec:
    text = (
        f'[[model]]\nname = "g"\nkind = "functional"\ninputs = {INPUTS}\n'
        f"layers = [ {layers} ]\n"
        + (f"outputs = {outputs}\n" if outputs is not None else "")
        + extra
    )
    return parse_models(text, "g.toml")[0]


def error(layers: str, outputs: str | None = None, extra: str = "") -> str:
    with pytest.raises(UserError) as info:
        graph(layers, outputs, extra)
    message = str(info.value)
    assert message.startswith("g.toml: ") and "\n" not in message
    assert info.value.exit_code == 2
    return message


BAD_REFS = [
    "l:-1",
    "l:0:0",
    "l:",
    "l:+1",
    "l:01",
    "l:00",
    f"l:{2**64}",
    "l:\u00b2",  # SUPERSCRIPT TWO: str.isdigit() says yes, int() says no
    "l:\u0661",  # ARABIC-INDIC ONE: int() reads it as 1
    "l: 1",
    "l:1e0",
    ":1",
]


@pytest.mark.parametrize("ref", BAD_REFS)
def test_malformed_input_references_are_refused(ref: str) -> None:
    layers = f'{LSTM}, {{ name = "d", type = "Dense", units = 2, inputs = ["{ref}"] }}'
    message = error(layers)
    assert f"layers[1] 'd' (Dense): inputs: {ref!r}: {SYNTAX}" in message


@pytest.mark.parametrize("ref", BAD_REFS)
def test_malformed_output_references_are_refused(ref: str) -> None:
    layers = f'{LSTM}, {{ name = "d", type = "Dense", units = 2, inputs = ["l:1"] }}'
    message = error(layers, f'["d", "{ref}"]')
    assert f"outputs: {ref!r} (layers): {SYNTAX}" in message


def test_well_formed_references_pick_the_output() -> None:
    layers = (
        f'{LSTM}, {{ name = "a", type = "Dense", units = 2, inputs = ["l:2"] }}, '
        '{ name = "b", type = "Dense", units = 3, inputs = ["l:0"] }, '
        '{ name = "c", type = "Concatenate", inputs = ["a", "b:0", "l:1", "x"] }'
    )
    spec = graph(layers, '["c", "l:1"]')
    assert spec.network is not None
    assert spec.network.output_shape == (13,)


def test_parse_ref_reads_decimal_indices_only() -> None:
    from gputui.fit.graph.syntax import parse_ref

    assert parse_ref("l:10") == ("l", 10)
    assert parse_ref("l") == ("l", 0)
    assert parse_ref("l:007") is None
    assert parse_ref("l:1234567") is None  # no layer has a million outputs


def test_an_index_past_the_outputs_still_names_the_count() -> None:
    layers = f'{LSTM}, {{ name = "d", type = "Dense", units = 2, inputs = ["l:3"] }}'
    assert "inputs: 'l' has 3 output(s), no output 3" in error(layers)


def test_a_refused_reference_is_one_line_and_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    path.write_text(
        f'[[model]]\nname = "g"\nkind = "functional"\ninputs = {INPUTS}\n'
        f'layers = [ {LSTM}, {{ type = "Dense", units = 2, inputs = ["l:\u00b2"] }} ]\n',
        encoding="utf-8",
    )
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["fit", str(path), "--gpu", "RTX 3090"])
    assert code == 2 and out.getvalue() == ""
    assert len(err.getvalue().splitlines()) == 1 and SYNTAX in err.getvalue()


# ------------------------------------------------------------------ names


def test_block_input_names_used_twice_are_refused() -> None:
    layers = '{ name = "c", block = "b", inputs = ["x", "x"] }'
    blocks = (
        '[model.blocks.b]\ninputs = ["i", "i"]\n'
        'layers = [ { name = "d", type = "Dense", units = 4, inputs = ["i"] } ]\n'
    )
    assert "blocks.b.inputs[1]: name 'i' is used twice" in error(layers, extra=blocks)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (
            '{ name = "a", type = "Dense", units = 4 }, { name = "a", type = "Dense", units = 4 }',
            "layers[1] 'a': name: 'a' is used twice",
        ),
        ('{ name = "x", type = "Dense", units = 4 }', "layers[0] 'x': name: 'x' is used twice"),
    ],
)
def test_layer_names_used_twice_stay_refused(text: str, fragment: str) -> None:
    assert fragment in error(text)


def test_input_and_model_names_used_twice_stay_refused() -> None:
    dup_inputs = (
        '[[model]]\nname = "g"\nkind = "functional"\n'
        'inputs = [ { name = "x", shape = [4] }, { name = "x", shape = [4] } ]\n'
        'layers = [ { type = "Dense", units = 2 } ]\n'
    )
    with pytest.raises(UserError, match=r"inputs\[1\]: name: 'x' is used twice"):
        parse_models(dup_inputs, "g.toml")
    one = '[[model]]\nname = "g"\ninput_shape = [4]\nlayers = [ { type = "Dense", units = 2 } ]\n'
    with pytest.raises(UserError, match="model 'g': name is used twice"):
        parse_models(one + one, "g.toml")


# ------------------------------------------------------------------ block nesting


def chain(depth: int, cycle: bool = False) -> str:
    """Blocks b0 .. b(depth-1), each calling the one before; the model calls the last."""
    tables = []
    for k in range(depth):
        inner = (
            '{ name = "d", type = "Dense", units = 4, inputs = ["i"] }'
            if k == 0
            else f'{{ name = "c", block = "b{k - 1}", inputs = ["i"] }}'
        )
        if k == 0 and cycle:
            inner = f'{{ name = "c", block = "b{depth - 1}", inputs = ["i"] }}'
        tables.append(f'[model.blocks.b{k}]\ninputs = ["i"]\nlayers = [ {inner} ]\n')
    return "".join(tables)


def test_blocks_nested_up_to_the_limit_are_accepted() -> None:
    layers = f'{{ name = "top", block = "b{MAX_BLOCK_DEPTH - 1}", inputs = ["x"] }}'
    spec = graph(layers, '["top"]', chain(MAX_BLOCK_DEPTH))
    assert spec.params == 4 * 4 + 4


def test_blocks_nested_past_the_limit_are_a_depth_limit_not_a_cycle() -> None:
    depth = MAX_BLOCK_DEPTH + 1
    layers = f'{{ name = "top", block = "b{depth - 1}", inputs = ["x"] }}'
    message = error(layers, '["top"]', chain(depth))
    assert f"block: blocks nest deeper than {MAX_BLOCK_DEPTH} levels at 'b0'" in message
    assert "calls itself" not in message


def test_a_real_cycle_says_so_with_its_chain() -> None:
    layers = '{ name = "top", block = "b2", inputs = ["x"] }'
    message = error(layers, '["top"]', chain(3, cycle=True))
    assert "block: 'b2' calls itself (b2 -> b1 -> b0 -> b2)" in message


# ------------------------------------------------------------------ shapes


def test_an_input_holding_too_many_values_is_refused() -> None:
    text = (
        '[[model]]\nname = "g"\nkind = "functional"\n'
        'inputs = [ { name = "x", shape = [1048576, 1048576, 2] } ]\n'
        'layers = [ { type = "GlobalAveragePooling2D" } ]\n'
    )
    with pytest.raises(UserError, match=r"inputs\[0\]: shape: .* values per sample; at most"):
        parse_models(text, "g.toml")
    sequential = (
        '[[model]]\nname = "s"\ninput_shape = [1048576, 1048576, 2]\n'
        'layers = [ { type = "GlobalAveragePooling2D" } ]\n'
    )
    with pytest.raises(UserError, match="input_shape: .* values per sample; at most"):
        parse_models(sequential, "g.toml")
