"""Graphs of tens of thousands of layers: accepted up to the memory bound, with
the answer the structure predicts, and refused past it with one line that says why.

Before: more than 5,000 layers were refused by both importers ("at most 5000 layers are
checked"), with no word on why. Timing is benchmarks/large_graphs.py's job, not these tests'.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gputui.cli import main
from gputui.core.errors import UserError
from gputui.fit.graph.estimate import memory_model
from gputui.fit.graph.limits import LAYER_COST_KIB, MAX_LAYERS
from gputui.fit.importers.modelsfile import ModelSpec, parse_models

D, BATCH = 16, 4096  # a chain of Dense(D) on D features


def dense_stack(n: int, mode: str = "train") -> str:
    layers = ", ".join([f'{{ type = "Dense", units = {D} }}'] * n)
    return (
        f'[[model]]\nname = "chain"\ninput_shape = [{D}]\nbatch_size = {BATCH}\n'
        f'optimizer = "adam"\nmode = "{mode}"\nlayers = [ {layers} ]\n'
    )


def dense_graph(n: int) -> str:
    """The same chain in the functional syntax, every layer naming its input."""
    rows = [f'{{ name = "d0", type = "Dense", units = {D}, inputs = ["x"] }}']
    rows += [
        f'{{ name = "d{i}", type = "Dense", units = {D}, inputs = ["d{i - 1}"] }}'
        for i in range(1, n)
    ]
    return (
        f'[[model]]\nname = "chain"\nkind = "functional"\nbatch_size = {BATCH}\n'
        f'inputs = [ {{ name = "x", shape = [{D}] }} ]\noutputs = ["d{n - 1}"]\n'
        f"layers = [ {', '.join(rows)} ]\n"
    )


def _tensor(name: str) -> dict[str, Any]:
    return {"class_name": "__keras_tensor__", "config": {"keras_history": [name, 0, 0]}}


def dense_keras(n: int) -> str:
    """The chain as Keras 3's model.to_json() writes it (shapes left out, as Keras allows)."""
    layers: list[dict[str, Any]] = [
        {
            "class_name": "InputLayer",
            "config": {"batch_shape": [None, D], "dtype": "float32", "name": "x"},
            "name": "x",
            "inbound_nodes": [],
        }
    ]
    prev = "x"
    for i in range(n):
        layers.append(
            {
                "class_name": "Dense",
                "config": {"name": f"d{i}", "units": D},
                "name": f"d{i}",
                "inbound_nodes": [{"args": [_tensor(prev)], "kwargs": {}}],
            }
        )
        prev = f"d{i}"
    config = {
        "name": "chain",
        "layers": layers,
        "input_layers": [["x", 0, 0]],
        "output_layers": [[prev, 0, 0]],
    }
    return json.dumps({"class_name": "Functional", "config": config})


def refusal(text: str) -> str:
    with pytest.raises(UserError) as info:
        parse_models(text, "big.toml")
    return str(info.value)


def expect_bound(message: str, where: str, count: str) -> None:
    assert "\n" not in message
    assert message.startswith(where), message
    assert f"{count} layers; at most {MAX_LAYERS:,} layers are checked" in message
    assert f"each costs about {LAYER_COST_KIB} KiB of memory here" in message


def test_the_bound_is_set_by_memory_not_at_the_old_five_thousand() -> None:
    assert MAX_LAYERS >= 50_000
    # the bound costs at most a few GiB of memory by the documented per-layer figure
    assert MAX_LAYERS * LAYER_COST_KIB <= 4 << 20


def test_six_thousand_layers_are_checked_in_both_syntaxes() -> None:
    """Refused before (5,000 at most)."""
    (stack,) = parse_models(dense_stack(6000), "big.toml")
    (graph,) = parse_models(dense_graph(6000), "big.toml")
    for model in (stack, graph):
        assert model.network is not None and len(model.network.nodes) == 6000
        assert model.params == 6000 * (D * D + D)


def test_past_the_bound_a_stack_is_refused_naming_file_field_bound_and_why() -> None:
    msg = refusal(dense_stack(MAX_LAYERS + 1))
    expect_bound(msg, "big.toml: model 'chain': layers:", f"{MAX_LAYERS + 1:,}")


def test_past_the_bound_a_graph_is_refused_naming_file_field_bound_and_why() -> None:
    msg = refusal(dense_graph(MAX_LAYERS + 1))
    expect_bound(msg, "big.toml: model 'chain': layers:", f"{MAX_LAYERS + 1:,}")


def test_past_the_bound_blocks_expanded_are_refused() -> None:
    """Few entries, many calls: a block of 1,000 layers called past the bound."""
    calls = MAX_LAYERS // 1000 + 1
    block = ", ".join([f'{{ type = "Dense", units = {D} }}'] * 1000)
    rows = ", ".join(
        f'{{ name = "b{i}", block = "blk", inputs = ["{"x" if i == 0 else f"b{i - 1}"}"] }}'
        for i in range(calls)
    )
    text = (
        '[[model]]\nname = "chain"\nkind = "functional"\n'
        f'inputs = [ {{ name = "x", shape = [{D}] }} ]\nlayers = [ {rows} ]\n'
        f'[model.blocks.blk]\ninputs = ["h"]\nlayers = [ {block} ]\n'
    )
    msg = refusal(text)
    assert msg.startswith("big.toml: model 'chain': "), msg
    assert f"more than {MAX_LAYERS:,} layers; at most {MAX_LAYERS:,} layers are checked" in msg
    assert f"{LAYER_COST_KIB} KiB" in msg


def test_past_the_bound_a_keras_file_is_refused_before_it_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "big.json"
    path.write_text(dense_keras(MAX_LAYERS + 1))
    assert main(["fit", str(path), "--gpu", "H100 SXM"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    expect_bound(lines[0].removeprefix("gputui: "), str(path), f"{MAX_LAYERS + 1:,}")
    assert "config.layers" in lines[0]


def test_a_layer_whose_class_name_is_not_a_string_is_one_line_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The layer count runs before the type checks: a list as class_name (found by the keras
    fuzz family) crashed it with TypeError: unhashable type."""
    doc = json.loads(dense_keras(3))
    doc["config"]["layers"][1]["class_name"] = ["Dense"]
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(doc))
    assert main(["fit", str(path), "--gpu", "H100 SXM"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "class_name" in lines[0]


def _chain_check(model: ModelSpec) -> tuple[str, int, int, int, int]:
    phase, b = memory_model(model, "fp32", backend="cpu").breakdown(BATCH)
    return phase, b.weights, b.optimizer_state, b.activations, b.workspace


def test_ten_thousand_dense_layers_give_what_the_structure_predicts() -> None:
    """Parameters N * (d*d + d) exactly; training's peak is the last layer's backward, with
    every layer's saved input alive (N * batch * d * 4 bytes) and adam's two states."""
    per_layer = D * D + D
    for n in (10, 10_000):
        (model,) = parse_models(dense_stack(n), "big.toml")
        assert model.params == model.trainable_params == n * per_layer
        phase, weights, state, acts, work = _chain_check(model)
        assert phase == f"backward Dense (layers[{n - 1}])"
        assert weights == n * per_layer * 4
        assert state == 2 * n * per_layer * 4
        assert acts == n * BATCH * D * 4  # grows by one saved input per layer
        assert work == 2 * BATCH * D * 4  # the output's gradient and the input's


def test_ten_thousand_layers_at_inference_keep_a_constant_activation_peak() -> None:
    """Without autograd a tensor lives until its reader: the input, one layer's in and out."""
    peaks = []
    for n in (10, 10_000):
        (model,) = parse_models(dense_stack(n, mode="inference"), "big.toml")
        _, weights, _, acts, _ = _chain_check(model)
        assert weights == n * (D * D + D) * 4
        peaks.append(acts)
    assert peaks[0] == peaks[1] == 3 * BATCH * D * 4


def test_a_ten_thousand_layer_keras_file_is_checked_by_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused before (the Keras importer's graph walk stopped at 5,000)."""
    n = 10_000
    path = tmp_path / "chain.json"
    path.write_text(dense_keras(n))
    code = main(["fit", str(path), "--gpu", "H100 SXM", "--precision", "fp32", "--json"])
    assert code == 0, capsys.readouterr().err
    (model,) = json.loads(capsys.readouterr().out)["models"]
    assert model["model"]["params"] == n * (D * D + D)
    assert len(model["model"]["layers"]) == n
