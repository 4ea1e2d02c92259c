"""The runtime a layer model is estimated for: --runtime, a models TOML's key, and for a
Keras file the backend Keras is configured with here; every answer says which and why,
and one that is not modelled says the estimate is PyTorch-style."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.core.errors import UserError
from gputui.fit.importers.keras_config import configured_runtime
from tests.conftest import run_fit

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "keras"
CONVNET = str(FIXTURES / "mnist_convnet.json")
CARD = ["--gpu", "RTX 3090"]


def test_keras_backend_variable_wins_over_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "keras.json").write_text('{"backend": "jax"}')
    env = {"KERAS_BACKEND": "torch", "KERAS_HOME": str(tmp_path)}
    runtime, why = configured_runtime(env)
    assert runtime == "keras-torch"
    assert "KERAS_BACKEND=torch" in why


def test_keras_json_backend_is_read_from_keras_home(tmp_path: Path) -> None:
    (tmp_path / "keras.json").write_text('{"floatx": "float32", "backend": "jax"}')
    runtime, why = configured_runtime({"KERAS_HOME": str(tmp_path)})
    assert runtime == "keras-jax"
    assert "keras.json" in why


def test_without_any_configuration_keras_defaults_to_tensorflow(tmp_path: Path) -> None:
    runtime, why = configured_runtime({"KERAS_HOME": str(tmp_path)})
    assert runtime == "keras-tensorflow"
    assert "default" in why


@pytest.mark.parametrize(
    "text", ["{not json", '["torch"]', '{"backend": "numpy"}', '{"backend": 3}']
)
def test_a_bad_keras_json_is_one_line_naming_the_file(tmp_path: Path, text: str) -> None:
    (tmp_path / "keras.json").write_text(text)
    with pytest.raises(UserError) as err:
        configured_runtime({"KERAS_HOME": str(tmp_path)})
    assert "keras.json" in str(err.value)
    assert "\n" not in str(err.value)


def test_a_keras_file_defaults_to_the_configured_backend(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    code, out, _ = run_fit(capsys, CONVNET, *CARD)
    assert code == 0
    assert "runtime: keras-jax (KERAS_BACKEND=jax)" in out
    assert "keras-jax is not modelled: this estimate is PyTorch-style" in out
    code, out, _ = run_fit(capsys, CONVNET, *CARD, "--json")
    facts = json.loads(out)["models"][0]["assumptions"]
    assert facts["runtime"] == "keras-jax"
    assert facts["runtime_modelled"] is False
    assert "PyTorch-style" in facts["runtime_note"]


def test_the_flag_overrides_the_configured_backend_without_reading_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "keras.json").write_text("{broken")
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    code, out, err = run_fit(capsys, CONVNET, *CARD, "--runtime", "keras-torch", "--json")
    assert code == 0, err
    facts = json.loads(out)["models"][0]["assumptions"]
    assert facts == {
        "runtime": "keras-torch",
        "runtime_source": "--runtime",
        "runtime_modelled": True,
        "runtime_note": None,
    }


def test_a_layer_table_is_pytorch_unless_it_says_otherwise(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    table = """
[[model]]
name = "m"
input_shape = [16]
layers = [{ type = "Dense", units = 8 }]
"""
    path = tmp_path / "models.toml"
    path.write_text(table)
    code, out, _ = run_fit(capsys, str(path), *CARD)
    assert "runtime: pytorch (a models-TOML layer table" in out
    path.write_text(table.replace('name = "m"', 'name = "m"\nruntime = "keras-tensorflow"'))
    code, out, _ = run_fit(capsys, str(path), *CARD)
    assert "runtime: keras-tensorflow (the model table's runtime)" in out
    assert "not modelled" in out
    path.write_text(table.replace('name = "m"', 'name = "m"\nruntime = "tf"'))
    code, _, err = run_fit(capsys, str(path), *CARD)
    assert code == 2
    assert "model 'm': runtime: must be one of pytorch, keras-torch" in err


def test_runtime_is_refused_for_a_transformer(capsys: pytest.CaptureFixture[str]) -> None:
    llm = Path(__file__).resolve().parents[2] / "examples" / "llm"
    config = sorted(llm.glob("*.json"))[0]
    code, _, err = run_fit(capsys, str(config), *CARD, "--runtime", "keras-torch")
    assert code == 2
    assert "--runtime" in err


def test_a_keras_sidecar_takes_a_runtime_key(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KERAS_BACKEND", "jax")  # the table's key wins, the config is unread
    path = tmp_path / "models.toml"
    path.write_text(f'[[model]]\nname = "c"\nkeras = "{CONVNET}"\nruntime = "keras-torch"\n')
    code, out, err = run_fit(capsys, str(path), *CARD)
    assert code == 0, err
    assert "runtime: keras-torch (the model table's runtime)" in out
    assert "not modelled" not in out
