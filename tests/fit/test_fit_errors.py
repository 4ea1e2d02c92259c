"""Bad models files fail with one line naming the file, model, layer and field (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputui.cli import main
from gputui.core.errors import UserError
from gputui.fit.importers.modelsfile import parse_models


def parse(layers: str, input_shape: str = "[28, 28, 1]", extra: str = "") -> None:
    text = f'[[model]]\nname = "m"\ninput_shape = {input_shape}\n{extra}layers = [ {layers} ]\n'
    parse_models(text, "models.toml")


@pytest.mark.parametrize(
    ("layers", "shape", "expected"),
    [
        # pooling past zero: 28 -> 14 -> 7 -> 3 -> 1 -> nothing
        (
            ", ".join(['{ type = "MaxPooling2D" }'] * 5),
            "[28, 28, 1]",
            "model 'm': layers[4] (MaxPooling2D): pool_size:",
        ),
        (
            '{ type = "Conv2D", filters = 8, kernel_size = 5 }',
            "[3, 3, 1]",
            "layers[0] (Conv2D): kernel_size:",
        ),
        (
            '{ type = "Flatten" }, { type = "LSTM", units = 4 }',
            "[4, 4, 1]",
            "layers[1] (LSTM): input shape:",
        ),
        (
            '{ type = "Conv2D", filters = 8, kernel_size = 3 }',
            "[28, 28]",
            "layers[0] (Conv2D): input shape:",
        ),
        ('{ type = "Dense", units = 0 }', "[4]", "layers[0] (Dense): units: must be >= 1"),
        ('{ type = "Dense" }', "[4]", "layers[0] (Dense): units: is required"),
        (
            '{ type = "Dense", units = 3, activaton = "relu" }',
            "[4]",
            "layers[0] (Dense): activaton: unknown argument",
        ),
        (
            '{ type = "Dense", units = 3, activation = "rellu" }',
            "[4]",
            "activation: unknown activation 'rellu'",
        ),
        ('{ type = "Dropout", rate = 1.5 }', "[4]", "layers[0] (Dropout): rate: must be in [0, 1)"),
        (
            '{ type = "Conv4D", filters = 3 }',
            "[4]",
            "layers[0] (?): type: unknown layer type 'Conv4D'",
        ),
        (
            '{ type = "Reshape", target_shape = [5, 5] }',
            "[4, 4, 1]",
            "layers[0] (Reshape): target_shape: cannot reshape",
        ),
        (
            '{ type = "Conv2D", filters = 8, kernel_size = 3, padding = "full" }',
            "[8, 8, 1]",
            "padding: must be one of valid, same",
        ),
        (
            '{ type = "Conv2D", filters = 8, kernel_size = 3, strides = 2, dilation_rate = 2 }',
            "[8, 8, 1]",
            "strides:",
        ),
        (
            '{ type = "Bidirectional", layer = { type = "Dense", units = 3 } }',
            "[5, 4]",
            "layers[0] (Bidirectional): layer:",
        ),
        (
            '{ type = "Bidirectional", layer = { type = "LSTM", units = -1 } }',
            "[5, 4]",
            "layer.units: must be >= 1",
        ),
        (
            '{ type = "Conv2D", filters = 8, kernel_size = 3, data_format = "channels_first" }',
            "[8, 8, 1]",
            "data_format:",
        ),
    ],
)
def test_layer_errors_name_model_layer_and_field(layers: str, shape: str, expected: str) -> None:
    with pytest.raises(UserError) as info:
        parse(layers, shape)
    message = str(info.value)
    assert message.startswith("models.toml: model 'm': ")
    assert expected in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ('optimizer = "adagrad"\n', "optimizer:"),
        ('mode = "score"\n', "mode:"),
        ("batch_size = 0\n", "batch_size:"),
        ('colour = "red"\n', "colour: unknown field"),
    ],
)
def test_model_field_errors(extra: str, field: str) -> None:
    with pytest.raises(UserError, match=field):
        parse('{ type = "Dense", units = 3 }', "[4]", extra)


def test_missing_input_shape_and_invalid_toml() -> None:
    with pytest.raises(UserError, match="input_shape: required"):
        parse_models(
            '[[model]]\nname = "m"\nlayers = [ { type = "Dense", units = 3 } ]\n', "f.toml"
        )
    with pytest.raises(UserError, match=r"^f\.toml:2: invalid TOML"):
        parse_models('[[model]]\nname = = "m"\n', "f.toml")


def test_first_layer_input_shape_is_accepted_like_keras() -> None:
    text = (
        '[[model]]\nname = "m"\nlayers = [ { type = "Conv2D", filters = 32, kernel_size = [3, 3], '
        'activation = "relu", input_shape = [28, 28, 1] } ]\n'
    )
    (m,) = parse_models(text)
    assert m.network is not None and m.network.input_shape == (28, 28, 1)


def test_gan_shapes_must_connect() -> None:
    text = (
        '[[model]]\nname = "g"\nkind = "gan"\n'
        '[model.generator]\ninput_shape = [10]\nlayers = [ { type = "Dense", units = 5 } ]\n'
        '[model.discriminator]\ninput_shape = [6]\nlayers = [ { type = "Dense", units = 1 } ]\n'
    )
    with pytest.raises(UserError, match="discriminator.input_shape"):
        parse_models(text)


def test_cli_bad_file_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[[model]]\nname = "m"\ninput_shape = [2, 2, 1]\nlayers = [ { type = "MaxPooling2D", pool_size = 3 } ]\n'
    )
    assert main(["fit", str(bad), "--gpu", "RTX 3090"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "bad.toml: model 'm': layers[0] (MaxPooling2D): pool_size:" in err
    assert "Traceback" not in err
    assert bad.read_text().startswith("[[model]]")  # never rewritten


def test_cli_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", str(tmp_path / "nope.toml"), "--gpu", "RTX 3090"]) == 2
    assert "nope.toml: no such models file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        # tomllib lets Python's int-conversion ValueError through (the fuzz campaign's seed 1)
        (f"[[model]]\nname = 'm'\nbatch_size = {'9' * 5001}\n", "a number is too long"),
        ("[[model]]\nname = 'm'\nx = " + "[" * 2000 + "]" * 2000 + "\n", "nested too deeply"),
    ],
    ids=["5001-digit integer", "2000 nested arrays"],
)
def test_hostile_toml_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, reason: str
) -> None:
    path = tmp_path / "models.toml"
    path.write_text(text)
    assert main(["fit", str(path), "--gpu", "RTX 3090"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and reason in err[0], err
