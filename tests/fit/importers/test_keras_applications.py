"""keras.applications' own layers (ConvNeXt's LayerScale and StochasticDepth,
InceptionResNetV2's CustomScaleLayer): stock models written by real Keras import,
count what Keras counts, and check; each layer keeps what its Keras `call` keeps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gputui.cli import main
from gputui.core.errors import UserError
from gputui.fit.graph.layer_args import LayerArgError
from gputui.fit.graph.registry import analyse_layer
from gputui.fit.importers import modelsfile
from gputui.fit.importers.keras import load_keras

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "keras"
STOCK = ("convnext_tiny", "convnext_tiny_drop_path", "inception_resnet_v2")


def _counts(name: str) -> dict[str, Any]:
    text = (FIXTURES / f"{name}.counts.json").read_text(encoding="utf-8")
    return dict(json.loads(text))


def _spec(name: str) -> modelsfile.ModelSpec:
    model = load_keras(FIXTURES / f"{name}.json", skip_unknown=False)
    table = {**model.table, "batch_size": 2, "optimizer": "adam", "mode": "train"}
    return modelsfile.parse_model_table(table, name)


@pytest.mark.parametrize("name", STOCK)
def test_stock_application_imports_without_skipping_and_counts_like_keras(name: str) -> None:
    model = load_keras(FIXTURES / f"{name}.json", skip_unknown=False)
    assert not model.warnings
    counts = _counts(name)
    spec = _spec(name)
    assert (spec.params, spec.trainable_params) == (counts["total"], counts["trainable"])


def test_each_application_layer_is_in_its_fixture() -> None:
    """The fixtures exercise every class (ConvNeXtTiny alone has no StochasticDepth)."""
    types = {
        name: {e.get("type") for e in load_keras(FIXTURES / f"{name}.json").table["layers"]}
        for name in STOCK
    }
    assert "LayerScale" in types["convnext_tiny"]
    assert "StochasticDepth" not in types["convnext_tiny"]
    assert {"LayerScale", "StochasticDepth"} <= types["convnext_tiny_drop_path"]
    assert "CustomScaleLayer" in types["inception_resnet_v2"]


def _fit_json(capsys: pytest.CaptureFixture[str], name: str, *extra: str) -> dict[str, Any]:
    argv = ["fit", str(FIXTURES / f"{name}.json"), "--gpu", "A100 SXM4 80 GB", "--json"]
    assert main([*argv, *extra]) == 0
    doc = json.loads(capsys.readouterr().out)
    return dict(doc["models"][0])


def _estimate(entry: dict[str, Any], precision: str) -> dict[str, Any]:
    return next(e for e in entry["estimates"] if e["precision"] == precision)


@pytest.mark.parametrize("name", ["convnext_tiny", "inception_resnet_v2"])
def test_fit_check_of_the_stock_json_is_sensible(
    capsys: pytest.CaptureFixture[str], name: str
) -> None:
    entry = _fit_json(capsys, name, "--precision", "fp32")
    fp32 = _estimate(entry, "fp32")
    params = _counts(name)["total"]
    assert fp32["fits"] is True and fp32["batch_size"] == 32
    b = fp32["breakdown"]
    # fp32 Adam: weights, their gradients and two moments, 4 bytes each
    assert b["weights"] == params * 4
    assert b["optimizer_state"] == _counts(name)["trainable"] * 8
    # a batch of 32 images keeps far more than the weights, and far less than the card
    assert b["activations"] > 4 * b["weights"]
    assert 1 << 30 < fp32["peak_bytes"] < 40 << 30


def test_application_layers_report_params_and_what_they_keep(
    capsys: pytest.CaptureFixture[str],
) -> None:
    layers = _fit_json(capsys, "convnext_tiny_drop_path")["model"]["layers"]
    scale = [e for e in layers if e["type"] == "LayerScale"]
    assert len(scale) == 18
    first = scale[0]
    assert first["params"] == first["output_shape"][-1] == 96
    assert first["saved_elements_per_sample"] == 56 * 56 * 96  # its input, for gamma's grad
    drop = [e for e in layers if e["type"] == "StochasticDepth"]
    # the rates rise from 0 over the 18 blocks; Keras puts a linear activation at rate 0
    assert len(drop) == 17 and all(e["params"] == 0 for e in drop)


# --- the layers' mechanisms -------------------------------------------------------------


def test_layer_scale_keeps_its_input_only_while_gamma_trains() -> None:
    raw = {"type": "LayerScale", "init_values": 1e-6, "projection_dim": 64}
    st = analyse_layer(0, raw, ((14, 14, 64),))
    assert (st.trainable_params, st.param_tensors, st.output_shape) == (64, (64,), (14, 14, 64))
    assert st.saves_input_if_trainable and not st.saves_input
    assert st.backward_transient == 14 * 14 * 64  # grad * x, summed down to gamma
    frozen = analyse_layer(0, {**raw, "trainable": False}, ((14, 14, 64),))
    assert (frozen.trainable_params, frozen.non_trainable_params) == (0, 64)
    assert not frozen.saves_input_if_trainable


def test_layer_scale_projection_must_match_the_channels() -> None:
    with pytest.raises(LayerArgError) as info:
        analyse_layer(0, {"type": "LayerScale", "projection_dim": 32}, ((7, 7, 64),))
    assert info.value.field == "projection_dim" and "64" in str(info.value)


def test_stochastic_depth_keeps_one_value_per_sample_and_rate_zero_is_a_view() -> None:
    st = analyse_layer(0, {"type": "StochasticDepth", "drop_path_rate": 0.2}, ((28, 28, 8),))
    el = 28 * 28 * 8
    assert st.params == 0 and not st.saves_input and not st.saves_output
    assert [s.elements for s in st.internal_saved] == [1]  # the (batch, 1, 1, 1) mask
    assert st.forward_transient == el  # x / keep, until the product
    off = analyse_layer(0, {"type": "StochasticDepth", "drop_path_rate": 0.0}, ((28, 28, 8),))
    assert off.output_is_view and off.internal_saved == ()
    with pytest.raises(LayerArgError):
        analyse_layer(0, {"type": "StochasticDepth", "drop_path_rate": 1.0}, ((4,),))


def test_custom_scale_adds_a_scaled_residual_and_keeps_nothing() -> None:
    raw = {"type": "CustomScaleLayer", "scale": 0.17}
    st = analyse_layer(0, raw, ((35, 35, 320), (35, 35, 320)))
    el = 35 * 35 * 320
    assert st.params == 0 and st.output_shape == (35, 35, 320)
    assert not st.saves_input and st.internal_saved == ()
    assert st.forward_transient == el and st.flops == 2 * el
    with pytest.raises(LayerArgError):
        analyse_layer(0, raw, ((35, 35, 320),))
    with pytest.raises(LayerArgError):
        analyse_layer(0, raw, ((35, 35, 320), (17, 17, 320)))


def test_a_look_alike_custom_class_is_still_unknown(tmp_path: Path) -> None:
    """Only the class from keras.applications' own module is trusted, not its name."""
    doc = json.loads((FIXTURES / "convnext_tiny.json").read_text(encoding="utf-8"))
    for layer in doc["config"]["layers"]:
        if layer["class_name"] == "LayerScale":
            layer["module"] = "my_project.blocks"
            layer["registered_name"] = "my_project>LayerScale"
    path = tmp_path / "convnext_custom.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(UserError) as info:
        load_keras(path, skip_unknown=False)
    assert "custom layer class 'LayerScale'" in str(info.value)
