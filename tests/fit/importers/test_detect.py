"""`detect_kind` tells model files apart by content, never by their names."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from gputui.core.errors import UserError
from gputui.fit.importers import detect_kind

KERAS = {"class_name": "Functional", "config": {"name": "m", "layers": []}}
HF = {"model_type": "llama", "hidden_size": 64}


def write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


@pytest.mark.parametrize(
    ("filename", "content", "kind"),
    [
        # Names lie: a Keras JSON called config.json, an HF config called model.toml.
        ("config.json", json.dumps(KERAS), "keras-json"),
        ("model.toml", json.dumps(HF), "hf-config"),
        ("model.json", "\ufeff" + json.dumps(KERAS, indent=2), "keras-json"),
        ("weights.bin", b"GGUF\x03\x00\x00\x00" + b"\x00" * 32, "gguf"),
        ("models.txt", '[[model]]\nname = "m"\n', "toml"),
        ("models.json", '# comment\n[[model]]\nname = "m"\n', "toml"),
        ("m.toml", '[model]\nname = "m"\n', "toml"),
        ("empty.toml", "", "toml"),
    ],
)
def test_kind_from_content(tmp_path: Path, filename: str, content: str | bytes, kind: str) -> None:
    assert detect_kind(write(tmp_path / filename, content)) == kind


def test_keras_archive_read_without_weights(tmp_path: Path) -> None:
    path = tmp_path / "model.zip"  # renamed: still an archive
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("metadata.json", json.dumps({"keras_version": "3.0"}))
        archive.writestr("config.json", json.dumps(KERAS))
        archive.writestr("model.weights.h5", b"\x89HDF\r\n\x1a\n" + b"\x00" * 64)
    assert detect_kind(path) == "keras-archive"


def test_hf_folder(tmp_path: Path) -> None:
    write(tmp_path / "config.json", json.dumps(HF))
    assert detect_kind(tmp_path) == "hf-folder"


def expect_error(path: Path, *fragments: str) -> str:
    with pytest.raises(UserError) as info:
        detect_kind(path)
    message = str(info.value)
    assert "\n" not in message
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message
    assert info.value.exit_code == 2
    return message


def test_folder_without_config(tmp_path: Path) -> None:
    expect_error(tmp_path, "config.json")


def test_missing_file(tmp_path: Path) -> None:
    expect_error(tmp_path / "nope.json", "cannot read")


def test_json_of_neither_kind(tmp_path: Path) -> None:
    expect_error(write(tmp_path / "x.json", '{"layers": []}'), "neither a Keras", "model_type")


def test_json_array_is_not_a_model(tmp_path: Path) -> None:
    expect_error(write(tmp_path / "x.json", "[1, 2]"), "neither a Keras")


def test_broken_json_names_the_line(tmp_path: Path) -> None:
    message = expect_error(write(tmp_path / "x.json", '{\n"class_name": "Functional",\n,}'))
    assert f"{tmp_path / 'x.json'}:3: invalid JSON" in message


def test_zip_without_config(tmp_path: Path) -> None:
    path = tmp_path / "m.keras"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("other.txt", "x")
    expect_error(path, "without config.json")


def test_zip_with_hf_config_is_not_keras(tmp_path: Path) -> None:
    path = tmp_path / "m.keras"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("config.json", json.dumps(HF))
    expect_error(path, "not a Keras model")


def test_truncated_zip(tmp_path: Path) -> None:
    expect_error(write(tmp_path / "m.keras", b"PK\x03\x04broken"), "unreadable zip")


def test_unknown_binary(tmp_path: Path) -> None:
    expect_error(write(tmp_path / "m.bin", b"\x89PNG\r\n\x1a\n\x00\x00"), "binary")


def test_control_characters_in_name_are_shown(tmp_path: Path) -> None:
    path = tmp_path / "evil\x1b]0;x\x07.json"
    with pytest.raises(UserError) as info:
        detect_kind(path)
    assert "\x1b" not in str(info.value) and "^[" in str(info.value)
