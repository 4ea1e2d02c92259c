"""The Keras importer on small hand-made JSON, in the shapes Keras 3 and tf.keras 2 write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gputui.core.errors import UserError
from gputui.fit.importers.keras import keras_table, load_keras

F32 = {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}}


def policy(name: str) -> dict[str, Any]:
    return {"module": "keras", "class_name": "DTypePolicy", "config": {"name": name}}


def t(layer: str, node: int = 0, index: int = 0, shape: list[Any] | None = None) -> dict[str, Any]:
    """A Keras 3 __keras_tensor__ as it appears in inbound_nodes."""
    return {
        "class_name": "__keras_tensor__",
        "config": {"shape": shape, "dtype": "float32", "keras_history": [layer, node, index]},
    }


def node(*args: Any, **kwargs: Any) -> dict[str, Any]:
    return {"args": list(args), "kwargs": kwargs}


def layer(
    cls: str, name: str, nodes: list[Any], module: str = "keras.layers", **config: Any
) -> dict[str, Any]:
    config.setdefault("dtype", F32)
    return {
        "module": module,
        "class_name": cls,
        "config": {"name": name, "trainable": True, **config},
        "registered_name": None,
        "name": name,
        "inbound_nodes": nodes,
    }


def inp(name: str, *shape: int | None, dtype: str = "float32") -> dict[str, Any]:
    return {
        "module": "keras.layers",
        "class_name": "InputLayer",
        "config": {"batch_shape": [None, *shape], "dtype": dtype, "name": name},
        "registered_name": None,
        "name": name,
        "inbound_nodes": [],
    }


def functional(
    layers: list[Any], inputs: list[str], outputs: list[Any], name: str = "m", **extra: Any
) -> dict[str, Any]:
    return {
        "module": "keras.src.models.functional",
        "class_name": "Functional",
        "config": {
            "name": name,
            "trainable": True,
            "layers": layers,
            "input_layers": [[n, 0, 0] for n in inputs],
            "output_layers": outputs,
            **extra,
        },
        "registered_name": "Functional",
    }


def dense(name: str, src: str, units: int = 4, **kw: Any) -> dict[str, Any]:
    return layer("Dense", name, [node(t(src))], units=units, **kw)


def table(data: Any, **kwargs: Any) -> dict[str, Any]:
    return keras_table(data, "m.json", **kwargs).table


def error(data: Any, **kwargs: Any) -> str:
    with pytest.raises(UserError) as info:
        keras_table(data, "m.json", **kwargs)
    message = str(info.value)
    assert message.startswith("m.json: ") and "\n" not in message
    return message


# --- structure -------------------------------------------------------------------------------


def test_arguments_keep_keras_names_and_drop_what_does_not_change_memory() -> None:
    model = functional(
        [
            inp("x", 8),
            dense(
                "d",
                "x",
                units=3,
                activation="relu",
                kernel_initializer={"class_name": "GlorotUniform", "config": {"seed": None}},
                kernel_regularizer=None,
                bias_constraint=None,
                lora_rank=None,
                seed=7,
            ),
        ],
        ["x"],
        ["d", 0, 0],
    )
    out = table(model)
    assert out == {
        "name": "m",
        "kind": "functional",
        "inputs": [{"name": "x", "shape": [8]}],
        "outputs": ["d"],
        "layers": [
            {"name": "d", "type": "Dense", "units": 3, "activation": "relu", "inputs": ["x"]}
        ],
    }


def test_shared_layer_at_two_depths_runs_in_graph_order() -> None:
    """A(B(A(x))): A is listed first but its second call needs B."""
    model = functional(
        [
            inp("x", 4),
            layer("Dense", "a", [node(t("x")), node(t("b"))], units=4),
            layer("Dense", "b", [node(t("a"))], units=4),
        ],
        ["x"],
        ["a", 1, 0],
    )
    out = table(model)
    assert [(e["name"], e["inputs"]) for e in out["layers"]] == [
        ("a", ["x"]),
        ("b", ["a"]),
        ("a_call2", ["b"]),
    ]
    assert out["layers"][2] == {"name": "a_call2", "reuse": "a", "inputs": ["b"]}
    assert out["outputs"] == ["a_call2"]


def test_call_names_never_collide_with_layer_names() -> None:
    model = functional(
        [
            inp("x", 4),
            layer("Dense", "d", [node(t("x")), node(t("d_call2"))], units=4),
            dense("d_call2", "d"),
        ],
        ["x"],
        [["d", 1, 0]],
    )
    names = [e["name"] for e in table(model)["layers"]]
    assert names == ["d", "d_call2", "d_call2_2"]


def test_state_outputs_and_initial_state() -> None:
    model = functional(
        [
            inp("enc", 5, 3),
            inp("dec", 6, 3),
            layer("LSTM", "e", [node(t("enc"))], units=8, return_state=True),
            layer(
                "LSTM",
                "d",
                [node(t("dec"), initial_state=[t("e", 0, 1), t("e", 0, 2)], training=False)],
                units=8,
                return_sequences=True,
            ),
        ],
        ["enc", "dec"],
        [["d", 0, 0], ["e", 0, 2]],
    )
    out = table(model)
    assert out["layers"][1]["inputs"] == ["dec", "e:1", "e:2"]
    assert out["outputs"] == ["d", "e:2"]


def test_attention_inputs_and_call_options() -> None:
    model = functional(
        [
            inp("q", 5, 8),
            inp("v", 7, 8),
            layer(
                "MultiHeadAttention",
                "mha",
                [
                    node(
                        t("q"),
                        value=t("v"),
                        key=t("v"),
                        use_causal_mask=True,
                        attention_mask=t("q"),
                    )
                ],
                num_heads=2,
                key_dim=4,
            ),
        ],
        ["q", "v"],
        ["mha", 0, 0],
    )
    result = keras_table(model, "m.json")
    mha = result.table["layers"][0]
    assert mha["inputs"] == ["q", "v", "v"]
    assert mha["use_causal_mask"] is True
    assert result.warnings == (
        "layer 'mha' (MultiHeadAttention): its attention_mask input is not modelled",
    )


def test_lists_holding_none_cannot_be_written() -> None:
    model = functional(
        [
            inp("x", 5, 8),
            layer("Dropout", "drop", [node(t("x"))], rate=0.5, noise_shape=[None, 1, 8]),
            layer(
                "EinsumDense",
                "ein",
                [node(t("drop"))],
                equation="abc,cd->abd",
                output_shape=[None, 4],
            ),
        ],
        ["x"],
        ["ein", 0, 0],
    )
    result = keras_table(model, "m.json")
    drop, ein = result.table["layers"]
    assert drop == {"name": "drop", "type": "Dropout", "rate": 0.5, "inputs": ["x"]}
    assert "output_shape" not in ein
    assert result.warnings == (
        "layer 'ein' (EinsumDense): argument output_shape = (None, 4) holds None; left out",
    )


def test_bidirectional_mirror_is_dropped_a_different_backward_layer_kept() -> None:
    def lstm(name: str, units: int, backwards: bool) -> dict[str, Any]:
        return {
            "module": "keras.layers",
            "class_name": "LSTM",
            "config": {"name": name, "units": units, "go_backwards": backwards, "dtype": F32},
        }

    def model(backward_units: int) -> dict[str, Any]:
        bi = layer(
            "Bidirectional",
            "bi",
            [node(t("x"))],
            layer=lstm("forward_lstm", 8, False),
            backward_layer=lstm("backward_lstm", backward_units, True),
            merge_mode="concat",
        )
        return functional([inp("x", 5, 3), bi], ["x"], ["bi", 0, 0])

    mirrored = table(model(8))["layers"][0]
    assert mirrored["layer"] == {"type": "LSTM", "units": 8, "go_backwards": False}
    assert "backward_layer" not in mirrored
    other = table(model(4))["layers"][0]
    assert other["backward_layer"] == {"type": "LSTM", "units": 4, "go_backwards": True}


def test_nested_models_become_blocks_at_the_top_level() -> None:
    inner = functional([inp("i", 4), dense("id", "i")], ["i"], ["id", 0, 0], name="inner")
    inner["name"] = "inner"
    inner["inbound_nodes"] = [node(t("mi"))]
    middle = functional([inp("mi", 4), inner], ["mi"], ["inner", 1, 0], name="middle")
    middle["config"]["trainable"] = False
    middle["name"] = "middle"
    middle["inbound_nodes"] = [node(t("x")), node(t("y"))]
    model = functional(
        [
            inp("x", 4),
            inp("y", 4),
            middle,
            layer("Add", "sum", [node([t("middle"), t("middle", 1)])]),
        ],
        ["x", "y"],
        ["sum", 0, 0],
    )
    out = table(model)
    assert set(out["blocks"]) == {"middle", "inner"}
    assert out["layers"][:2] == [
        {"name": "middle", "block": "middle", "inputs": ["x"], "trainable": False},
        {"name": "middle_call2", "reuse": "middle", "inputs": ["y"]},
    ]
    assert out["layers"][2]["inputs"] == ["middle", "middle_call2"]
    middle_block = out["blocks"]["middle"]
    # Keras 3 counts a nested Functional's own first node in output_layers only.
    assert middle_block["outputs"] == ["inner"]
    assert middle_block["layers"] == [
        {"name": "inner", "block": "inner", "inputs": ["mi"], "trainable": False}
    ]
    assert out["blocks"]["inner"]["layers"][0]["trainable"] is False


def test_block_input_shape_comes_from_the_call_when_keras_left_it_open() -> None:
    inner = functional([inp("i", None, 3), dense("id", "i")], ["i"], ["id", 0, 0], name="inner")
    inner["name"] = "inner"
    inner["inbound_nodes"] = [node(t("x", shape=[None, 5, 3]))]
    model = functional([inp("x", 5, 3), inner], ["x"], ["inner", 1, 0])
    assert table(model)["blocks"]["inner"]["inputs"] == [{"name": "i", "shape": [5, 3]}]


def test_sequential_model() -> None:
    model = {
        "module": "keras",
        "class_name": "Sequential",
        "config": {
            "name": "seq",
            "layers": [
                {
                    "module": "keras.layers",
                    "class_name": "Dense",
                    "config": {"name": "a", "units": 4},
                },
                {
                    "module": "keras.layers",
                    "class_name": "Dense",
                    "config": {"name": "b", "units": 2},
                },
            ],
            "build_input_shape": [None, 8],
        },
    }
    out = table(model)
    assert out["inputs"] == [{"name": "input", "shape": [8]}]
    assert [(e["name"], e["inputs"]) for e in out["layers"]] == [("a", ["input"]), ("b", ["a"])]
    assert out["outputs"] == ["b"]
    del model["config"]["build_input_shape"]
    assert "without an input shape" in error(model)


def test_name_override_and_int_inputs() -> None:
    model = functional(
        [
            inp("ids", 16, dtype="int64"),
            layer("Embedding", "emb", [node(t("ids"))], input_dim=9, output_dim=4),
        ],
        ["ids"],
        ["emb", 0, 0],
    )
    out = table(model, name="mine")
    assert out["name"] == "mine"
    assert out["inputs"] == [{"name": "ids", "shape": [16], "dtype": "int64"}]


def test_names_with_control_characters_are_shown_not_acted_upon() -> None:
    model = functional([inp("x", 4), dense("d\x1b[2J", "x")], ["x"], ["d\x1b[2J", 0, 0])
    out = table(model)
    assert out["layers"][0]["name"] == "d^[[2J"
    assert out["outputs"] == ["d^[[2J"]


# --- keras.ops recorded in a graph --------------------------------------------------------


def op(name: str, cls: str, *args: Any) -> dict[str, Any]:
    entry = layer(cls, name, [node(*args)], module="keras.src.ops.numpy")
    entry["config"] = {"name": name}
    return entry


@pytest.mark.parametrize(
    ("cls", "args", "scale", "offset"),
    [
        ("Add", (t("x"), 3.0), 1.0, 3.0),
        ("Subtract", (t("x"), 1.0), 1.0, -1.0),
        ("Subtract", (3.0, t("x")), -1.0, 3.0),
        ("Multiply", (t("x"), 0.5), 0.5, 0.0),
        ("Divide", (t("x"), 4.0), 0.25, 0.0),
    ],
)
def test_scalar_ops_are_rescaling(
    cls: str, args: tuple[Any, ...], scale: float, offset: float
) -> None:
    model = functional([inp("x", 4), op("o", cls, *args)], ["x"], ["o", 0, 0])
    assert table(model)["layers"] == [
        {"name": "o", "type": "Rescaling", "scale": scale, "offset": offset, "inputs": ["x"]}
    ]


def test_two_tensor_op_is_the_merge_layer() -> None:
    model = functional(
        [inp("x", 4), dense("d", "x"), op("o", "Multiply", t("x"), t("d"))], ["x"], ["o", 0, 0]
    )
    assert table(model)["layers"][1] == {"name": "o", "type": "Multiply", "inputs": ["x", "d"]}


@pytest.mark.parametrize(
    ("cls", "args"), [("Divide", (2.0, t("x"))), ("Mean", (t("x"),)), ("Divide", (t("x"), t("x")))]
)
def test_other_ops_are_unknown(cls: str, args: tuple[Any, ...]) -> None:
    model = functional([inp("x", 4), op("o", cls, *args)], ["x"], ["o", 0, 0])
    assert f"layer 'o' ({cls}): Keras operation ops.numpy.{cls} is not supported" in error(model)


# --- precision --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policies", "expected"),
    [
        (["mixed_bfloat16", "mixed_bfloat16", "float32"], "amp_bf16"),
        (["mixed_float16", "float32"], "amp_fp16"),
        (["bfloat16", "bfloat16", "float32"], "bf16"),
        (["float16", "float32", "float32"], None),
        (["float32"], None),
    ],
)
def test_dtype_policy_is_the_precision(policies: list[str], expected: str | None) -> None:
    layers = [inp("x", 4)]
    for i, name in enumerate(policies):
        layers.append(dense(f"d{i}", "x" if i == 0 else f"d{i - 1}", dtype=policy(name)))
    model = functional(layers, ["x"], [f"d{len(policies) - 1}", 0, 0])
    assert keras_table(model, "m.json").precision == expected


def test_tf_keras_2_policy_object_and_plain_dtype() -> None:
    model = functional(
        [
            inp("x", 4),
            dense("a", "x", dtype={"class_name": "Policy", "config": {"name": "mixed_float16"}}),
            dense("b", "a", dtype="float32"),
        ],
        ["x"],
        ["b", 0, 0],
    )
    assert keras_table(model, "m.json").precision == "amp_fp16"


# --- input shapes -----------------------------------------------------------------------------


def variable() -> dict[str, Any]:
    return functional(
        [inp("seq", None, 6), layer("LSTM", "l", [node(t("seq"))], units=4)], ["seq"], ["l", 0, 0]
    )


def test_variable_dimension_resolved_from_input_shapes() -> None:
    assert table(variable(), input_shapes={"seq": [30, 6]})["inputs"] == [
        {"name": "seq", "shape": [30, 6]}
    ]


@pytest.mark.parametrize(
    ("given", "fragment"),
    [
        (
            None,
            "input 'seq' has a variable dimension (shape (None, 6)); give it, e.g. --input-shape seq=N,6",
        ),
        (
            {"seq": [30]},
            "input 'seq': the shape given has 1 dimension(s), the model's has 2 ((None, 6))",
        ),
        ({"seq": [30, 5]}, "input 'seq': dimension 2 is 6 in the model, the shape given says 5"),
        ({"seq": [0, 6]}, "input 'seq': the shape given must be positive integers, got [0, 6]"),
        (
            {"sequence": [30, 6]},
            "input shape given for 'sequence', which is not an input of the model (its inputs: seq)",
        ),
    ],
)
def test_input_shape_errors(given: dict[str, list[int]] | None, fragment: str) -> None:
    assert fragment in error(variable(), input_shapes=given)


# --- unknown layers ---------------------------------------------------------------------------


def custom(name: str, src: str) -> dict[str, Any]:
    entry = layer("Scale", name, [node(t(src, shape=[None, 4]))], module=None, factor=2)
    entry["registered_name"] = "my_pkg>Scale"
    return entry


def test_custom_layer_is_an_error_unless_skipped() -> None:
    model = functional([inp("x", 4), custom("s", "x"), dense("d", "s")], ["x"], ["d", 0, 0])
    assert error(model) == (
        "m.json: layer 's' (Scale): custom layer class 'Scale' (registered as 'my_pkg>Scale'); "
        "--skip-unknown treats unknown layers as identity"
    )
    result = keras_table(model, "m.json", skip_unknown=True)
    assert result.table["layers"] == [{"name": "d", "type": "Dense", "units": 4, "inputs": ["x"]}]
    assert result.warnings == (
        "layer 's' (Scale): custom layer class 'Scale' (registered as 'my_pkg>Scale'); treated "
        "as identity, its parameters and activations are not counted",
    )


def test_skipped_model_output_passes_its_input_on() -> None:
    model = functional([inp("x", 4), dense("d", "x"), custom("s", "d")], ["x"], ["s", 0, 0])
    assert table(model, skip_unknown=True)["outputs"] == ["d"]


def test_lambda_runs_user_code() -> None:
    model = functional(
        [inp("x", 4), layer("Lambda", "lam", [node(t("x"))], function={})], ["x"], ["lam", 0, 0]
    )
    assert "layer 'lam' (Lambda): layer class 'Lambda' runs user code" in error(model)


# --- tf.keras 2 ---------------------------------------------------------------------------


def legacy_layer(cls: str, name: str, nodes: list[Any], **config: Any) -> dict[str, Any]:
    return {
        "class_name": cls,
        "config": {"name": name, **config},
        "name": name,
        "inbound_nodes": nodes,
    }


def test_tf_keras_2_nodes_and_nested_model_numbering() -> None:
    tower = {
        "class_name": "Sequential",
        "config": {
            "name": "tower",
            "layers": [
                {
                    "class_name": "InputLayer",
                    "config": {"batch_input_shape": [None, 4], "name": "ti"},
                },
                {"class_name": "Dense", "config": {"name": "td", "units": 3}},
            ],
        },
        "name": "tower",
        "inbound_nodes": [[["a", 0, 0, {}]], [["b", 0, 0, {}]]],
    }
    model = {
        "class_name": "Functional",
        "keras_version": "2.15.0",
        "config": {
            "name": "legacy",
            "layers": [
                legacy_layer("InputLayer", "a", [], batch_input_shape=[None, 4]),
                legacy_layer("InputLayer", "b", [], batch_input_shape=[None, 4]),
                tower,
                # tf.keras 2 counts a nested model's own first node everywhere: calls are 1, 2.
                legacy_layer("Subtract", "diff", [[["tower", 1, 0, {}], ["tower", 2, 0, {}]]]),
                legacy_layer(
                    "MultiHeadAttention",
                    "mha",
                    [[["diff", 0, 0, {"value": ["a", 0, 0]}]]],
                    num_heads=1,
                    key_dim=2,
                ),
            ],
            "input_layers": [["a", 0, 0], ["b", 0, 0]],
            "output_layers": [["mha", 0, 0], ["tower", 2, 0]],
        },
    }
    result = keras_table(model, "m.json")
    assert result.source_format == "tf.keras2"
    out = result.table
    assert out["inputs"] == [{"name": "a", "shape": [4]}, {"name": "b", "shape": [4]}]
    assert [(e["name"], e["inputs"]) for e in out["layers"]] == [
        ("tower", ["a"]),
        ("tower_call2", ["b"]),
        ("diff", ["tower", "tower_call2"]),
        ("mha", ["diff", "a"]),
    ]
    assert out["outputs"] == ["mha", "tower_call2"]
    assert out["blocks"]["tower"]["inputs"] == [{"name": "ti", "shape": [4]}]


def test_keras_1_style_sequential_list_config() -> None:
    model = {
        "class_name": "Sequential",
        "keras_version": "2.1.6",
        "config": [
            {
                "class_name": "Dense",
                "config": {"name": "a", "units": 4, "batch_input_shape": [None, 3]},
            },
            {"class_name": "Dense", "config": {"name": "b", "units": 1}},
        ],
    }
    out = table(model)
    assert out["inputs"] == [{"name": "input", "shape": [3]}]
    assert out["layers"][0] == {"name": "a", "type": "Dense", "units": 4, "inputs": ["input"]}


# --- malformed files ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ([], "not a Keras model"),
        (
            {"class_name": "Dense", "config": {}},
            "top-level class 'Dense' is not a Keras Functional or Sequential model",
        ),
        (
            {"class_name": "Functional", "config": {"name": "m", "layers": []}},
            "needs a list of layers",
        ),
        (
            functional([inp("x", 4), dense("d", "nowhere")], ["x"], ["d", 0, 0]),
            "layer 'd' takes input from 'nowhere', which is not a layer of the model",
        ),
        (
            functional([inp("x", 4), dense("d", "x")], ["x"], ["d", 3, 0]),
            "which is called 1 time(s)",
        ),
        (
            functional([inp("x", 4), dense("d", "x")], ["d"], ["d", 0, 0]),
            "input_layers names 'd', which is not an InputLayer",
        ),
        (
            functional([inp("x", 4), dense("d", "x"), dense("d", "x")], ["x"], ["d", 0, 0]),
            "layer name 'd' is used twice",
        ),
        (
            functional(
                [
                    inp("x", 4),
                    layer("Dense", "d", [node({"class_name": "__keras_tensor__", "config": {}})]),
                ],
                ["x"],
                ["d", 0, 0],
            ),
            "layer 'd': config.layers[1].inbound_nodes[0].args[0].config.keras_history: "
            "must be [layer name, node index, tensor index]",
        ),
        (
            functional([inp("x", 4), dense("a:b", "x")], ["x"], ["a:b", 0, 0]),
            "a ':' in a layer name is not supported",
        ),
    ],
)
def test_malformed_models(data: Any, fragment: str) -> None:
    assert fragment in error(data)


def test_output_node_past_the_calls_is_an_error() -> None:
    model = functional([inp("x", 4), dense("d", "x")], ["x"], ["d", 2, 0])
    assert error(model) == (
        "m.json: model 'm': output_layers takes call 2 of 'd', which is called 1 time(s)"
    )


def test_load_keras_refuses_other_kinds(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama"}), encoding="utf-8")
    with pytest.raises(UserError) as info:
        load_keras(path)
    assert str(info.value) == f"{path}: not a Keras model file (it reads as hf-config)"


def test_keras_hub_position_embedding_is_known_other_hub_layers_are_not() -> None:
    def hub(cls: str) -> dict[str, Any]:
        entry = layer(cls, "pos", [node(t("x"))], module="keras_hub.src.layers", sequence_length=8)
        entry["registered_name"] = f"keras_hub>{cls}"
        return entry

    known = functional([inp("x", 8, 4), hub("PositionEmbedding")], ["x"], ["pos", 0, 0])
    assert table(known)["layers"][0] == {
        "name": "pos",
        "type": "PositionEmbedding",
        "sequence_length": 8,
        "inputs": ["x"],
    }
    other = functional([inp("x", 8, 4), hub("RotaryEmbedding")], ["x"], ["pos", 0, 0])
    assert "keras_hub layer class 'RotaryEmbedding' is not supported" in error(other)


def test_arguments_at_inert_defaults_are_left_out_others_kept() -> None:
    def bn(renorm: bool, axis: Any) -> dict[str, Any]:
        return layer(
            "BatchNormalization",
            "bn",
            [node(t("x"))],
            axis=axis,
            renorm=renorm,
            renorm_momentum=0.99,
            renorm_clipping=None,
        )

    off = table(functional([inp("x", 4, 4, 2), bn(False, [3])], ["x"], ["bn", 0, 0]))["layers"][0]
    assert off == {"name": "bn", "type": "BatchNormalization", "axis": 3, "inputs": ["x"]}
    on = table(functional([inp("x", 4, 4, 2), bn(True, -1)], ["x"], ["bn", 0, 0]))["layers"][0]
    assert (on["renorm"], on["renorm_momentum"], on["axis"]) == (True, 0.99, -1)


@pytest.mark.parametrize(
    ("query", "axes", "kept"), [([None, 5, 8], [1], False), ([None, 4, 5, 8], [1], True)]
)
def test_default_attention_axes_are_left_out(query: list[Any], axes: list[int], kept: bool) -> None:
    mha = layer(
        "MultiHeadAttention",
        "mha",
        [node(t("q", shape=query), t("q", shape=query))],
        num_heads=1,
        key_dim=2,
        attention_axes=axes,
        use_gate=False,
    )
    model = functional([inp("q", *query[1:]), mha], ["q"], ["mha", 0, 0])
    entry = table(model)["layers"][0]
    assert ("attention_axes" in entry) is kept
    assert "use_gate" not in entry
