"""The models file (TOML graph models) is validated: crashes, hangs and wrong accepts found by fuzzing.

Each case failed before its fix (a traceback, a hang, or a model reported as fitting).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gputui.cli import main
from gputui.core.errors import UserError
from gputui.fit.importers.modelsfile import MAX_LAYERS, parse_models


def seq(layers: str, head: str = "input_shape = [20]\n") -> str:
    return f'[[model]]\nname = "m"\n{head}layers = [ {layers} ]\n'


def err(text: str) -> str:
    with pytest.raises(UserError) as info:
        parse_models(text, "models.toml")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("models.toml")
    return message


def test_input_layer_batch_shape_not_a_list() -> None:
    msg = err(seq('{ type = "InputLayer", batch_shape = 5 }, { type = "Dense", units = 2 }', ""))
    assert "layers[0] (InputLayer): batch_shape: must be a list" in msg


def test_arrays_nested_500_deep_is_one_line() -> None:
    text = "x = " + "[" * 500 + "]" * 500 + "\n"
    assert "nested too deeply" in err(text)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (seq('{ type = "Dense", units = 2 }', f"input_shape = [17, {2**62}]\n"), "input_shape"),
        (
            seq(
                ", ".join(['{ type = "UpSampling2D", size = 1000000000000000000 }'] * 20),
                "input_shape = [4, 4, 1]\n",
            ),
            "layers[0] (UpSampling2D): size",
        ),
        (seq(f'{{ type = "Dense", units = {2**50} }}'), "units"),
        (seq('{ type = "Embedding", input_dim = 2000000000, output_dim = 2000000000 }'), "params"),
    ],
)
def test_huge_dimensions_are_bounded_at_parse_time(text: str, field: str) -> None:
    msg = err(text)
    assert field in msg
    assert "at most" in msg


def test_past_the_layer_bound_is_refused_and_a_long_model_is_linear() -> None:
    many = ", ".join(['{ type = "Dense", units = 4 }'] * (MAX_LAYERS + 1))
    assert f"at most {MAX_LAYERS:,} layers are checked" in err(seq(many))
    from gputui.fit.graph.estimate import memory_model

    # quadratic walks took minutes here (tests/fit/test_large_graphs.py checks 10,000 layers'
    # figures; benchmarks/large_graphs.py times them)
    long = parse_models(seq(", ".join(['{ type = "Dense", units = 4 }'] * 5000)))[0]
    mm = memory_model(long, "fp32", backend="cpu")
    assert mm.max_batch(2**34) > 0


@pytest.mark.parametrize(
    ("layers", "head", "expected"),
    [
        (
            '{ type = "Dense", units = 2, input_shape = [30] }',
            "input_shape = [20]\n",
            "layers[0] (Dense): input_shape: [30] differs from the model's input_shape [20]",
        ),
        (
            '{ type = "Dense", units = 2, input_dim = 7 }',
            "input_shape = [20]\n",
            "input_dim: [7] differs from the model's input_shape [20]",
        ),
        (
            '{ type = "InputLayer", shape = [5] }, { type = "Dense", units = 2 }',
            "input_shape = [20]\n",
            "layers[0] (InputLayer): shape: [5] differs from the model's input_shape [20]",
        ),
        (
            '{ type = "Dense", units = 2, batch_input_shape = [8, 21] }',
            "input_shape = [20]\n",
            "batch_input_shape",
        ),
        (
            '{ type = "Dense", units = 2, input_shape = "abc" }',
            "",
            "input_shape: must be a list of positive integers",
        ),
    ],
)
def test_first_layer_input_arguments_must_agree(layers: str, head: str, expected: str) -> None:
    assert expected in err(seq(layers, head))


@pytest.mark.parametrize(
    ("layer", "shape", "expected"),
    [
        ('{ type = "BatchNormalization", epsilon = "abc" }', "[4]", "epsilon: must be a number"),
        ('{ type = "BatchNormalization", momentum = -5 }', "[4]", "momentum: must be in"),
        ('{ type = "LSTM", units = 2, stateful = "abc" }', "[5, 4]", "stateful: must be true or"),
        ('{ type = "LSTM", units = 2, unroll = 7 }', "[5, 4]", "unroll: must be true or false"),
        ('{ type = "LSTM", units = 2, go_backwards = { x = 1 } }', "[5, 4]", "go_backwards:"),
        ('{ type = "Dropout", rate = 0.5, noise_shape = "abc" }', "[4]", "noise_shape:"),
        ('{ type = "Dropout", rate = 0.5, noise_shape = [1, 3] }', "[4]", "noise_shape:"),
        ('{ type = "Dense", units = 2, lora_rank = -5 }', "[4]", "lora_rank: must be >= 1"),
        ('{ type = "Dense", units = 2, trainable = "maybe" }', "[4]", "trainable: must be true"),
        (
            '{ type = "Bidirectional", layer = { type = "LSTM", units = 2, trainable = "x" } }',
            "[5, 4]",
            "layer.trainable: must be true",
        ),
        (
            '{ type = "Embedding", input_dim = 100, output_dim = 4, input_length = 99999 }',
            "[20]",
            "input_length: 99999 differs from the input's length 20",
        ),
        ('{ type = "Dense", units = 2, name = 5 }', "[4]", "name: must be a non-empty string"),
        ('{ type = "Normalization", mean = "x", variance = 1 }', "[4]", "mean: must be a number"),
        ('{ type = "Normalization", mean = 0, variance = -1 }', "[4]", "variance: must not be"),
        (
            '{ type = "PositionEmbedding", sequence_length = 4, initializer = 3 }',
            "[4, 2]",
            "initializer:",
        ),
        ('{ type = "Dense", units = 2, kernel_initializer = 5 }', "[4]", "kernel_initializer:"),
        (
            '{ type = "Conv2DTranspose", filters = 2, kernel_size = 2, padding = "same", output_padding = 0 }',
            "[1, 1, 3]",
            "output shape",
        ),
        ('{ type = "LayerNormalization", axis = [-1, 2] }', "[3, 4]", "axis: lists axis 2 twice"),
        (
            '{ type = "Conv1D", filters = 2, kernel_size = 3, strides = 2, dilation_rate = 2 }',
            "[20, 4]",
            "strides:",
        ),
        (
            '{ type = "SeparableConv2D", filters = 2, kernel_size = 3, strides = 2, dilation_rate = 2 }',
            "[20, 20, 4]",
            "strides:",
        ),
    ],
)
def test_every_accepted_argument_is_validated(layer: str, shape: str, expected: str) -> None:
    assert expected in err(seq(layer, f"input_shape = {shape}\n"))


def test_zero_sized_output_shape_is_an_error() -> None:
    msg = err(seq('{ type = "Reshape", target_shape = [0, 20] }'))
    assert "target_shape" in msg


def test_input_layer_then_embedding_vocabulary_is_accepted() -> None:
    text = seq(
        '{ type = "InputLayer", shape = [20] }, '
        '{ type = "Embedding", input_dim = 20000, output_dim = 8 }, '
        '{ type = "GlobalAveragePooling1D" }, { type = "Dense", units = 1 }',
        "",
    )
    (m,) = parse_models(text)
    assert m.params == 20000 * 8 + 9
    assert m.network is not None and m.network.integer_input


def test_control_characters_from_the_file_are_shown_not_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "m.toml"
    bad.write_text(
        '[[model]]\nname = "evil\\u001b]0;owned\\u0007"\ninput_shape = [4]\n'
        'layers = [ { type = "Dense", units = 2 } ]\n'
    )
    assert main(["fit", str(bad), "--gpu", "RTX 3090"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "evil^[]0;owned^G" in out
    bad.write_text(
        '[[model]]\nname = "m"\ninput_shape = [4]\n'
        'layers = [ { type = "Dense", units = 2, "\\u001b[2J" = 1 } ]\n'
    )
    assert main(["fit", str(bad), "--gpu", "RTX 3090"]) == 2
    err_text = capsys.readouterr().err
    assert "\x1b" not in err_text and "^[[2J" in err_text


def test_a_model_without_work_gives_valid_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    path = tmp_path / "m.toml"
    path.write_text(
        '[[model]]\nname = "m"\ninput_shape = [1]\nbatch_size = 1\nlayers = [ { type = "Flatten" } ]\n'
    )
    for extra in ([], ["--all-cards"]):
        target = [] if extra else ["--gpu", "RTX 3090"]
        assert main(["fit", str(path), *target, *extra, "--json"]) in (0, 1)
        json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(c))


@pytest.mark.parametrize(
    ("layers", "head", "expected"),
    [
        (
            '{ type = "InputLayer", batch_shape = [1, 28, 7] }, { type = "Dense", units = 2 }',
            "batch_size = 128\n",
            "layers[0] (InputLayer): batch_shape: fixes the batch at 1, but the model's batch_size is 128",
        ),
        (
            '{ type = "InputLayer", batch_shape = [1, 80, 32], input_shape = [81, 33] }',
            "batch_size = 1\n",
            "layers[0] (InputLayer): input_shape: [81, 33] differs from batch_shape [80, 32]",
        ),
        (
            '{ type = "Dense", units = 2, input_shape = [4], batch_size = 0 }',
            "",
            "batch_size: must be a positive integer",
        ),
    ],
)
def test_batch_fixed_by_a_layer_must_agree(layers: str, head: str, expected: str) -> None:
    assert expected in err(seq(layers, head))
