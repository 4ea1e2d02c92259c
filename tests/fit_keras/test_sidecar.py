"""A models-file entry naming a Keras file, with the fields the file cannot hold."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gputui.errors import UserError
from gputui.fit.config import parse_model_table
from gputui.fit.importers.sidecar import is_keras_sidecar, load_keras_sidecar

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "keras"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    shutil.copy(FIXTURES / "seq2seq_lstm.json", tmp_path / "translator.json")
    shutil.copy(FIXTURES / "text_transformer_custom.json", tmp_path / "custom.json")
    return tmp_path


def test_sidecar_fields_join_the_table(folder: Path) -> None:
    raw = {
        "name": "translator",
        "keras": "translator.json",  # relative to the models file's folder
        "batch_size": 64,
        "optimizer": "adamw",
        "mode": "train",
        "input_shapes": {"encoder_inputs": [40, 71], "decoder_inputs": [50, 93]},
    }
    assert is_keras_sidecar(raw)
    model = load_keras_sidecar(raw, "models.toml", folder)
    table = model.table
    assert (table["name"], table["batch_size"], table["optimizer"], table["mode"]) == (
        "translator",
        64,
        "adamw",
        "train",
    )
    assert table["inputs"][1] == {"name": "decoder_inputs", "shape": [50, 93]}
    assert "input_shapes" not in table and "keras" not in table
    spec = parse_model_table(table, "models.toml")
    assert (spec.batch_size, spec.optimizer, spec.params) == (64, "adamw", 718_173)


def test_skip_unknown_from_the_sidecar(folder: Path) -> None:
    raw = {"name": "c", "keras": str(folder / "custom.json"), "skip_unknown": True}
    assert load_keras_sidecar(raw, "models.toml", Path("/nowhere")).warnings


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"keras": "translator.json"}, "models.toml: model: name: required"),
        (
            {"name": "t", "keras": "translator.json", "layers": []},
            "models.toml: model 't': layers: unknown field for a Keras model",
        ),
        ({"name": "t", "keras": 3}, "models.toml: model 't': keras: must be the path"),
        (
            {"name": "t", "keras": "gone.json"},
            "models.toml: model 't': keras: 'gone.json': no such file",
        ),
        (
            {"name": "t", "keras": "translator.json", "skip_unknown": "yes"},
            "models.toml: model 't': skip_unknown: must be true or false",
        ),
        (
            {"name": "t", "keras": "translator.json", "input_shapes": {"encoder_inputs": [0]}},
            "models.toml: model 't': input_shapes.encoder_inputs: must be a list of positive",
        ),
        (
            {"name": "t", "keras": "translator.json"},
            "models.toml: model 't': keras 'translator.json': input 'encoder_inputs' has a "
            "variable dimension",
        ),
        (
            {"name": "t", "keras": "custom.json"},
            "models.toml: model 't': keras 'custom.json': layer 'token_and_position_embedding'",
        ),
    ],
)
def test_sidecar_errors_name_the_model_and_field(
    folder: Path, raw: dict[str, object], message: str
) -> None:
    with pytest.raises(UserError) as info:
        load_keras_sidecar(raw, "models.toml", folder)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)
