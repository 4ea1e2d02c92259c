"""A Keras file of the wrong structure is one line naming its JSON path; Keras' own rules hold.

Hand-made documents in the shapes Keras 3 and tf.keras 2 write, each with one field
of the wrong type or out of bounds, and the real fixtures reordered and renamed
the ways Keras itself accepts.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

from gputui.core.errors import UserError
from gputui.fit.graph.layer_args import MAX_DIM
from gputui.fit.importers.keras import keras_table
from gputui.fit.importers.modelsfile import parse_model_table

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "keras"


def t(layer: str, node: int = 0, index: int = 0) -> dict[str, Any]:
    """A Keras 3 __keras_tensor__ as inbound_nodes hold it."""
    return {
        "class_name": "__keras_tensor__",
        "config": {"shape": [None, 4], "dtype": "float32", "keras_history": [layer, node, index]},
    }


def keras3(nodes: Any = None, shape: Any = None, **changes: Any) -> dict[str, Any]:
    """Input x (4) -> Dense d (2), as Keras 3 writes it; `nodes` replaces d's inbound_nodes."""
    dense = {
        "module": "keras.layers",
        "class_name": "Dense",
        "config": {"name": "d", "trainable": True, "units": 2},
        "registered_name": None,
        "name": "d",
        "inbound_nodes": [{"args": [t("x")], "kwargs": {}}] if nodes is None else nodes,
    }
    model = {
        "module": "keras.src.models.functional",
        "class_name": "Functional",
        "config": {
            "name": "m",
            "trainable": True,
            "layers": [
                {
                    "module": "keras.layers",
                    "class_name": "InputLayer",
                    "config": {"batch_shape": [None, 4] if shape is None else shape, "name": "x"},
                    "registered_name": None,
                    "name": "x",
                    "inbound_nodes": [],
                },
                dense,
            ],
            "input_layers": [["x", 0, 0]],
            "output_layers": [["d", 0, 0]],
        },
        "registered_name": "Functional",
    }
    for path, value in changes.items():
        _set(model, path, value)
    return model


def keras2(nodes: Any = None) -> dict[str, Any]:
    """The same model as tf.keras 2 writes it (list nodes, keras_version at the top)."""
    model = keras3([[["x", 0, 0, {}]]] if nodes is None else nodes)
    model["keras_version"] = "2.15.0"
    for layer in model["config"]["layers"]:
        layer.pop("module")
        layer.pop("registered_name")
    model.pop("module")
    model.pop("registered_name")
    return model


def _set(doc: Any, path: str, value: Any) -> None:
    """Set doc[a][b]... for a path "a.b.0.c" (list indices as numbers)."""
    keys: list[Any] = [int(k) if k.isdigit() else k for k in path.split(".")]
    for key in keys[:-1]:
        doc = doc[key]
    doc[keys[-1]] = value


def error(data: Any) -> str:
    with pytest.raises(UserError) as info:
        keras_table(data, "m.json")
    message = str(info.value)
    assert message.startswith("m.json: ") and "\n" not in message
    assert info.value.exit_code == 2
    return message


def params(data: Any) -> int:
    return parse_model_table(keras_table(data, "m.json").table, "m.json").params


def test_the_hand_made_models_are_valid() -> None:
    assert params(keras3()) == params(keras2()) == 4 * 2 + 2


# --- inbound_nodes -------------------------------------------------------------------------

NODES = "layer 'd': config.layers[1].inbound_nodes"


@pytest.mark.parametrize(
    ("nodes", "where", "fragment"),
    [
        (None, "", "must be a list of calls, got null"),
        ("x", "", "must be a list of calls, got a string"),
        ({"args": []}, "", "must be a list of calls, got an object"),
        (5, "", "must be a list of calls, got the number 5"),
        ([None], "[0]", "must be a call (an object, or a list of entries), got null"),
        (["x"], "[0]", "must be a call (an object, or a list of entries), got a string"),
        ([{"args": "x"}], "[0].args", "must be a list, got a string"),
        ([{"args": [t("x")], "kwargs": []}], "[0].kwargs", "must be an object, got a list"),
        (
            [{"args": [{"class_name": "__keras_tensor__", "config": 5}]}],
            "[0].args[0].config",
            "must be an object",
        ),
        (
            [{"args": [t("x")], "kwargs": {"mask": [[[[1.0e400]]]]}}],
            "[0].kwargs.mask[0][0][0][0]",
            "an operand must be a finite number",
        ),
    ],
)
def test_keras3_inbound_nodes_of_the_wrong_type(nodes: Any, where: str, fragment: str) -> None:
    data = keras3(None if nodes is None else nodes)
    if nodes is None:
        data["config"]["layers"][1]["inbound_nodes"] = None
    assert f"{NODES}{where}: {fragment}" in error(data)


@pytest.mark.parametrize(
    ("nodes", "where", "fragment"),
    [
        ([[None]], "[0][0]", "must be a [layer, node, tensor] entry, got null"),
        ([[5]], "[0][0]", "must be a [layer, node, tensor] entry, got the number 5"),
        ([[["x"]]], "[0][0]", "must be [layer, node, tensor(, kwargs)], got 1 items"),
        ([[["x", 0, {"a": 1}, {}]]], "[0][0]", "must be [layer name, node index, tensor index]"),
        ([[["x", "0", 0, {}]]], "[0][0]", "must be [layer name, node index, tensor index]"),
        ([[["x", True, 0, {}]]], "[0][0]", "must be [layer name, node index, tensor index]"),
        ([[["x", -1, 0, {}]]], "[0][0]", "must be [layer name, node index, tensor index]"),
        ([[["x", 0, 0, "kw"]]], "[0][0][3]", "must be an object, got a string"),
        ("x", "", "must be a list of calls, got a string"),
    ],
)
def test_tf_keras2_inbound_nodes_of_the_wrong_type(nodes: Any, where: str, fragment: str) -> None:
    assert f"{NODES}{where}: {fragment}" in error(keras2(nodes))


@pytest.mark.parametrize(
    "history",
    [["x", 0], ["x", 0, 0, 0], [5, 0, 0], ["", 0, 0], ["x", -1, 0], ["x", 0, 1.5], ["x", 0, 2**64]],
)
def test_keras_history_of_the_wrong_arity_or_type(history: list[Any]) -> None:
    tensor = {"class_name": "__keras_tensor__", "config": {"keras_history": history}}
    message = error(keras3([{"args": [tensor], "kwargs": {}}]))
    assert f"{NODES}[0].args[0].config.keras_history: must be [layer name, node index" in message


def test_an_input_layer_has_only_node_0_tensor_0() -> None:
    assert "takes ['x', 3, 0], but an input has only node 0, tensor 0" in error(
        keras3([{"args": [t("x", 3)], "kwargs": {}}])
    )
    data = keras3()
    data["config"]["output_layers"] = [["x", 2, 0], ["d", 0, 0]]
    assert "output_layers takes ['x', 2, 0]" in error(data)


def test_arguments_nested_past_the_bound_are_refused() -> None:
    deep: Any = t("x")
    for _ in range(40):
        deep = [deep]
    assert "arguments nest deeper than 32 levels" in error(keras3([{"args": [deep]}]))


# --- every other structural field ------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "value", "fragment"),
    [
        ("config.layers", {"a": 1}, "config.layers: must be a list, got an object"),
        ("config.layers", None, "config.layers: must be a list, got null"),
        ("config", "x", "config: must be an object, got a string"),
        ("config.layers.1", "x", "config.layers[1]: must be a layer object, got a string"),
        ("config.layers.1.class_name", 5, "config.layers[1].class_name: must be a string"),
        ("config.layers.1.config", [1], "config.layers[1].config: must be an object, got a list"),
        ("config.layers.1.name", 7, "config.layers[1].name: must be a non-empty string"),
        ("config.layers.1.module", 7, "config.layers[1].module: must be a string"),
        ("config.layers.1.config.trainable", "no", "config.trainable: must be true or false"),
        ("config.layers.0.config.batch_shape", "x", "config.batch_shape: must be a shape"),
        ("config.layers.0.config.batch_shape", [None], "config.batch_shape: must be a shape"),
        ("config.input_layers", "x", "config.input_layers: must list [layer, node, tensor]"),
        ("config.input_layers", [["x", 0]], "config.input_layers[0]: must be [layer name"),
        ("config.output_layers", [["d", 0, 0, 0]], "config.output_layers[0]: must be [layer"),
        ("config.output_layers", {"out": [5, 0, 0]}, "config.output_layers.out: must be [layer"),
        ("module", 3, "module: must be a string"),
    ],
)
def test_structural_fields_of_the_wrong_type(path: str, value: Any, fragment: str) -> None:
    assert fragment in error(keras3(**{path: value}))


def test_the_top_must_be_a_model_object() -> None:
    assert error([]) == "m.json: the document: not a Keras model (expected class_name and config)"
    assert "not a Keras model" in error({"class_name": 5, "config": {}})


def test_models_nested_past_the_block_depth_are_refused() -> None:
    inner: dict[str, Any] = keras3()
    for k in range(18):
        inner = {
            "class_name": "Sequential",
            "config": {"name": f"s{k}", "layers": [inner]},
        }
    assert "models nest deeper than 16 levels" in error(inner)


# --- input dimensions ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "dim", [0, -1, -(2**31), MAX_DIM + 1, 2**64, True, False, 1.5, 32.0, "32", [4]]
)
@pytest.mark.parametrize("key", ["batch_shape", "batch_input_shape"])
def test_absurd_input_dimensions_are_refused(dim: Any, key: str) -> None:
    data = keras3()
    config = data["config"]["layers"][0]["config"]
    config.pop("batch_shape")
    config[key] = [None, dim]
    message = error(data)
    assert f"layer 'x': config.layers[0].config.{key}[1]: a dimension must be a positive " in (
        message
    )
    assert str(MAX_DIM) in message


def test_an_input_holding_too_many_values_is_refused() -> None:
    message = error(keras3(shape=[None, 2**20, 2**20, 2]))
    assert "config.batch_shape: holds 2.2e+12 values per sample; at most 1.1e+12" in message


def test_a_sequential_build_input_shape_is_bounded() -> None:
    data = {
        "class_name": "Sequential",
        "config": {
            "name": "s",
            "layers": [{"class_name": "Dense", "config": {"name": "a", "units": 2}}],
            "build_input_shape": [None, -4],
        },
    }
    assert "config.build_input_shape[1]: a dimension must be a positive integer" in error(data)


def test_a_recorded_tensor_shape_must_be_dimensions() -> None:
    tensor = t("x")
    tensor["config"]["shape"] = [None, -3]
    message = error(keras3([{"args": [tensor], "kwargs": {}}]))
    assert f"{NODES}[0].args[0].config.shape: must be a list of non-negative integers" in message


# --- what Keras accepts stays accepted ---------------------------------------------------------


def _fixture(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    path = FIXTURES / name
    counts = json.loads(path.with_name(path.stem + ".counts.json").read_text(encoding="utf-8"))
    return json.loads(path.read_text(encoding="utf-8")), counts


@pytest.mark.parametrize(
    "name",
    [
        "siamese_shared.json",
        "tf2/siamese_shared.json",
        "resnet50.json",
        "tf2/resnet50.json",
        "seq2seq_lstm.json",
        "vae_two_outputs.json",
        "frozen_backbone_finetune.json",
    ],
)
def test_layers_listed_before_their_inputs_and_renamed_configs_are_accepted(name: str) -> None:
    data, counts = _fixture(name)
    shapes = counts.get("input_shapes", {})
    before = parse_model_table(keras_table(data, name, input_shapes=shapes).table, name)
    changed = copy.deepcopy(data)
    rng = random.Random(name)
    rng.shuffle(changed["config"]["layers"])  # Keras defers a layer until its inputs exist
    for layer in changed["config"]["layers"]:
        if isinstance(layer.get("config"), dict) and "name" in layer:
            layer["config"]["name"] = f"renamed_{layer['name']}"  # the model's name wins
    after = parse_model_table(keras_table(changed, name, input_shapes=shapes).table, name)
    assert after.params == before.params == counts["total"]
    assert after.trainable_params == before.trainable_params == counts["trainable"]
    assert {n.name for n in after.networks[0].nodes} == {n.name for n in before.networks[0].nodes}


@pytest.mark.parametrize("operand", [10**400, float("inf"), float("nan")])
def test_a_keras_ops_operand_too_large_for_a_float_is_refused(operand: Any) -> None:
    """x * c recorded from keras.ops becomes Rescaling(scale=c): c must be a finite float."""
    op = {
        "module": "keras.src.ops.numpy",
        "class_name": "Multiply",
        "config": {"name": "o"},
        "registered_name": None,
        "name": "o",
    }
    keras_3 = keras3(**{"config.layers.1": {**op, "inbound_nodes": [{"args": [t("x"), operand]}]}})
    keras_3["config"]["output_layers"] = [["o", 0, 0]]
    assert "layer 'o': config.layers[1].inbound_nodes[0].args[1]: an operand must be" in error(
        keras_3
    )
    tf2 = keras2([[["x", 0, 0, {}], ["_CONSTANT_VALUE", -1, operand, {}]]])
    tf2["config"]["layers"][1].update(module="keras.src.ops.numpy", class_name="Multiply")
    assert "config.layers[1].inbound_nodes[0][1][2]: an operand must be" in error(tf2)


def test_a_float_argument_holding_a_huge_json_integer_is_refused() -> None:
    """JSON integers have no size limit (TOML's stop at 64 bits): float() would overflow."""
    data = keras3(
        **{"config.layers.1.class_name": "Dropout", "config.layers.1.config": {"rate": 10**400}}
    )
    with pytest.raises(UserError, match="rate: must be in .0, 1., got an integer too large"):
        params(data)
