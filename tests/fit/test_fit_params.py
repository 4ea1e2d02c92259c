"""Parameter counts and shapes must equal what Keras' model.summary() prints.

Expected totals are the published summaries of the Keras examples the shipped
models transcribe (not numbers read back from our own output).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gputui.fit.importers.modelsfile import ModelSpec, load_models, parse_models

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def examples() -> dict[str, ModelSpec]:
    return {m.name: m for m in load_models(ROOT / "examples" / "models.toml")}


@pytest.mark.parametrize(
    ("name", "total", "trainable"),
    [
        ("mnist-cnn", 1_199_882, 1_199_882),  # keras/examples/mnist_cnn.py
        ("lstm-classifier", 2_691_713, 2_691_713),  # keras/examples/imdb_lstm.py
        ("vgg16", 138_357_544, 138_357_544),  # keras.applications.VGG16
        ("simplernn-textgen", 128 * (60 + 128) + 128 + 128 * 60 + 60, None),
    ],
)
def test_sequential_examples_match_keras(
    examples: dict[str, ModelSpec], name: str, total: int, trainable: int | None
) -> None:
    m = examples[name]
    assert m.params == total
    if trainable is not None:
        assert m.trainable_params == trainable


def test_gan_examples_match_keras_gan_summaries(examples: dict[str, ModelSpec]) -> None:
    # eriklindernoren/Keras-GAN gan.py and dcgan.py summaries
    gan = examples["mnist-gan"]
    assert gan.generator is not None and gan.discriminator is not None
    assert gan.generator.params == 1_493_520
    assert gan.generator.non_trainable_params == 3_584
    assert gan.discriminator.params == 533_505
    dcgan = examples["mnist-dcgan"]
    assert dcgan.generator is not None and dcgan.discriminator is not None
    assert dcgan.generator.params == 856_193
    assert dcgan.generator.trainable_params == 855_809
    assert dcgan.discriminator.params == 393_729
    assert dcgan.discriminator.trainable_params == 392_833


def one(layers: str, input_shape: str) -> ModelSpec:
    text = f'[[model]]\nname = "t"\ninput_shape = {input_shape}\nlayers = [ {layers} ]\n'
    return parse_models(text, "t.toml")[0]


def test_keras_mnist_convnet_example_has_34826_params() -> None:
    # keras.io/examples/vision/mnist_convnet: "Total params: 34,826"
    m = one(
        '{ type = "Conv2D", filters = 32, kernel_size = [3, 3], activation = "relu" },'
        '{ type = "MaxPooling2D", pool_size = [2, 2] },'
        '{ type = "Conv2D", filters = 64, kernel_size = [3, 3], activation = "relu" },'
        '{ type = "MaxPooling2D", pool_size = [2, 2] },'
        '{ type = "Flatten" }, { type = "Dropout", rate = 0.5 },'
        '{ type = "Dense", units = 10, activation = "softmax" }',
        "[28, 28, 1]",
    )
    assert m.params == 34_826
    assert m.network is not None
    assert [lay.output_shape for lay in m.network.layers] == [
        (26, 26, 32),
        (13, 13, 32),
        (11, 11, 64),
        (5, 5, 64),
        (1600,),
        (1600,),
        (10,),
    ]


@pytest.mark.parametrize(
    ("layer", "shape", "params", "out"),
    [
        # GRU reset_after=True (Keras 2.4+/3 default): 3 * (units*(in+units) + 2*units)
        ('{ type = "GRU", units = 3 }', "[5, 4]", 3 * (3 * 7 + 6), (3,)),
        ('{ type = "GRU", units = 3, reset_after = false }', "[5, 4]", 3 * (3 * 7 + 3), (3,)),
        ('{ type = "LSTM", units = 3, return_sequences = true }', "[5, 4]", 4 * 3 * 8, (5, 3)),
        ('{ type = "SimpleRNN", units = 3 }', "[5, 4]", 3 * 4 + 3 * 3 + 3, (3,)),
        (
            '{ type = "Bidirectional", layer = { type = "LSTM", units = 3 } }',
            "[5, 4]",
            2 * 4 * 3 * 8,
            (6,),
        ),
        (
            '{ type = "Bidirectional", layer = { type = "GRU", units = 3, return_sequences = true }, merge_mode = "sum" }',
            "[5, 4]",
            2 * 3 * (3 * 7 + 6),
            (5, 3),
        ),
        ('{ type = "Embedding", input_dim = 100, output_dim = 8 }', "[7]", 800, (7, 8)),
        # depthwise 3*3*C*m + pointwise C*m*filters + filters
        (
            '{ type = "SeparableConv2D", filters = 16, kernel_size = 3, depth_multiplier = 2 }',
            "[10, 10, 8]",
            9 * 16 + 16 * 16 + 16,
            (8, 8, 16),
        ),
        (
            '{ type = "DepthwiseConv2D", kernel_size = 3, padding = "same" }',
            "[10, 10, 8]",
            9 * 8 + 8,
            (10, 10, 8),
        ),
        # Keras docs: Conv2DTranspose valid output = in*stride + max(kernel - stride, 0)
        (
            '{ type = "Conv2DTranspose", filters = 4, kernel_size = 3, strides = 2 }',
            "[7, 7, 8]",
            9 * 8 * 4 + 4,
            (15, 15, 4),
        ),
        (
            '{ type = "Conv2DTranspose", filters = 4, kernel_size = 3, strides = 2, padding = "same" }',
            "[7, 7, 8]",
            292,
            (14, 14, 4),
        ),
        (
            '{ type = "Conv2D", filters = 4, kernel_size = 3, strides = 2, padding = "same" }',
            "[7, 7, 2]",
            9 * 2 * 4 + 4,
            (4, 4, 4),
        ),
        (
            '{ type = "Conv2D", filters = 4, kernel_size = 3, dilation_rate = 2 }',
            "[9, 9, 2]",
            76,
            (5, 5, 4),
        ),
        (
            '{ type = "Conv1D", filters = 4, kernel_size = 3, padding = "causal" }',
            "[10, 2]",
            28,
            (10, 4),
        ),
        # BatchNormalization: gamma, beta trainable; moving mean/var not
        ('{ type = "BatchNormalization" }', "[5, 6]", 24, (5, 6)),
        ('{ type = "LayerNormalization" }', "[5, 6]", 12, (5, 6)),
        # Dense on a 3-D input acts on the last axis (Keras' tensordot)
        ('{ type = "Dense", units = 7 }', "[5, 6]", 6 * 7 + 7, (5, 7)),
        (
            '{ type = "MaxPooling2D", pool_size = 3, strides = 2, padding = "same" }',
            "[7, 7, 2]",
            0,
            (4, 4, 2),
        ),
        ('{ type = "GlobalAveragePooling2D", keepdims = true }', "[7, 7, 2]", 0, (1, 1, 2)),
        ('{ type = "UpSampling2D", size = [2, 3] }', "[4, 4, 2]", 0, (8, 12, 2)),
        ('{ type = "ZeroPadding2D", padding = [[1, 2], [3, 4]] }', "[4, 4, 2]", 0, (7, 11, 2)),
        ('{ type = "Reshape", target_shape = [-1, 4] }', "[4, 4, 2]", 0, (8, 4)),
    ],
)
def test_layer_params_and_shapes(layer: str, shape: str, params: int, out: tuple[int, ...]) -> None:
    m = one(layer, shape)
    assert m.network is not None
    assert m.params == params
    assert m.network.output_shape == out


def test_batchnorm_splits_trainable_and_moving_statistics() -> None:
    m = one('{ type = "BatchNormalization" }', "[10]")
    assert (m.trainable_params, m.params - m.trainable_params) == (20, 20)


def test_trainable_false_moves_params_to_non_trainable() -> None:
    m = one('{ type = "Dense", units = 4, trainable = false }', "[3]")
    assert (m.trainable_params, m.params) == (0, 16)
