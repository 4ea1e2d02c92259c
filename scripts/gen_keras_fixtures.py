"""Regenerate tests/fixtures/keras/ with real Keras 3 (never a gputui dependency).

Each fixture is what a user has on disk: `model.to_json()` (and one small
`.keras` archive), written by Keras itself, with Keras' own `count_params()`
(total and trainable) beside it in `<name>.counts.json`, so the importer's
parameter counts are checked against Keras rather than against our reading of
Keras. Models are built with `weights=None` and nothing is downloaded.

Run it in a virtual environment of its own, outside the repository:

    python3.11 -m venv /work/venv-keras
    /work/venv-keras/bin/pip install torch==2.13.0 keras
    KERAS_BACKEND=torch /work/venv-keras/bin/python scripts/gen_keras_fixtures.py

`--tf-keras` writes the tf.keras 2 fixtures (the older `inbound_nodes` format) into
tests/fixtures/keras/tf2/ with Keras 2 itself (the `tf-keras` package on TensorFlow):

    python3.11 -m venv /work/venv-tfkeras
    /work/venv-tfkeras/bin/pip install tensorflow-cpu==2.21.0 tf-keras==2.21.0
    /work/venv-tfkeras/bin/python scripts/gen_keras_fixtures.py --tf-keras

`--only NAME` regenerates one fixture; `--list` prints the names.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

LEGACY = "--tf-keras" in sys.argv[1:]
if LEGACY:
    import tf_keras as keras
    from tf_keras import layers
else:
    os.environ.setdefault("KERAS_BACKEND", "torch")  # chosen before the import
    import keras
    from keras import layers

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "keras"
if LEGACY:
    OUT = OUT / "tf2"


# --- keras.applications, weights=None (nothing downloaded) ---------------------------------


def convnext_base_builder(**kwargs: Any) -> keras.Model:
    """keras.applications' ConvNeXt builder, which the public ConvNeXt* call with rate 0."""
    if LEGACY:
        from tf_keras.src.applications.convnext import ConvNeXt
    else:
        from keras.src.applications.convnext import ConvNeXt
    return ConvNeXt(**kwargs)


def _app(builder: Callable[..., keras.Model], **kwargs: Any) -> Callable[[], keras.Model]:
    return lambda: builder(weights=None, **kwargs)


APPLICATIONS: dict[str, Callable[[], keras.Model]] = {
    "resnet50": _app(keras.applications.ResNet50),
    "resnet50v2": _app(keras.applications.ResNet50V2),
    "mobilenet": _app(keras.applications.MobileNet),
    "mobilenetv2": _app(keras.applications.MobileNetV2),
    "mobilenetv3small": _app(keras.applications.MobileNetV3Small),
    "efficientnetb0": _app(keras.applications.EfficientNetB0),
    "efficientnetv2b0": _app(keras.applications.EfficientNetV2B0),
    "densenet121": _app(keras.applications.DenseNet121),
    "inceptionv3": _app(keras.applications.InceptionV3),
    "xception": _app(keras.applications.Xception),
    "vgg16": _app(keras.applications.VGG16),
    # keras.applications' own layers, defined outside keras.layers: ConvNeXt's LayerScale,
    # its StochasticDepth (only with a drop_path_rate, which ConvNeXtTiny leaves at 0) and
    # InceptionResNetV2's CustomScaleLayer.
    "convnext_tiny": _app(keras.applications.ConvNeXtTiny),
    "convnext_tiny_drop_path": lambda: convnext_base_builder(
        depths=[3, 3, 9, 3],
        projection_dims=[96, 192, 384, 768],
        drop_path_rate=0.1,
        name="convnext_tiny_drop_path",
        weights=None,
    ),
    "inception_resnet_v2": _app(keras.applications.InceptionResNetV2),
}


# --- keras.io examples, written out --------------------------------------------------------


def unet_oxford_pets() -> keras.Model:
    """keras.io/examples/vision/oxford_pets_image_segmentation (img 160x160, 3 classes)."""
    inputs = keras.Input(shape=(160, 160, 3))
    x = layers.Conv2D(32, 3, strides=2, padding="same")(inputs)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    previous = x
    for filters in [64, 128, 256]:
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(filters, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(filters, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
        residual = layers.Conv2D(filters, 1, strides=2, padding="same")(previous)
        x = layers.add([x, residual])
        previous = x
    for filters in [256, 128, 64, 32]:
        x = layers.Activation("relu")(x)
        x = layers.Conv2DTranspose(filters, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.Activation("relu")(x)
        x = layers.Conv2DTranspose(filters, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.UpSampling2D(2)(x)
        residual = layers.UpSampling2D(2)(previous)
        residual = layers.Conv2D(filters, 1, padding="same")(residual)
        x = layers.add([x, residual])
        previous = x
    outputs = layers.Conv2D(3, 3, activation="softmax", padding="same")(x)
    return keras.Model(inputs, outputs, name="unet_oxford_pets")


def seq2seq_lstm() -> keras.Model:
    """keras.io/examples/nlp/lstm_seq2seq: encoder states are the decoder's initial_state."""
    num_encoder_tokens, num_decoder_tokens, latent_dim = 71, 93, 256
    encoder_inputs = keras.Input(shape=(None, num_encoder_tokens), name="encoder_inputs")
    encoder = layers.LSTM(latent_dim, return_state=True, name="encoder_lstm")
    _, state_h, state_c = encoder(encoder_inputs)
    decoder_inputs = keras.Input(shape=(None, num_decoder_tokens), name="decoder_inputs")
    decoder_lstm = layers.LSTM(
        latent_dim, return_sequences=True, return_state=True, name="decoder_lstm"
    )
    decoder_outputs, _, _ = decoder_lstm(decoder_inputs, initial_state=[state_h, state_c])
    decoder_outputs = layers.Dense(num_decoder_tokens, activation="softmax", name="decoder_dense")(
        decoder_outputs
    )
    return keras.Model([encoder_inputs, decoder_inputs], decoder_outputs, name="seq2seq_lstm")


def bidirectional_lstm_imdb() -> keras.Model:
    """keras.io/examples/nlp/bidirectional_lstm_imdb (variable-length int token input)."""
    inputs = keras.Input(shape=(None,), dtype="int32", name="tokens")
    x = layers.Embedding(20000, 128)(inputs)
    x = layers.Bidirectional(layers.LSTM(64, return_sequences=True))(x)
    x = layers.Bidirectional(layers.LSTM(64))(x)
    outputs = layers.Dense(1, activation="sigmoid")(x)
    return keras.Model(inputs, outputs, name="bidirectional_lstm_imdb")


def mnist_convnet() -> keras.Model:
    """keras.io/examples/vision/mnist_convnet: a Sequential model."""
    return keras.Sequential(
        [
            keras.Input(shape=(28, 28, 1)),
            layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Flatten(),
            layers.Dropout(0.5),
            layers.Dense(10, activation="softmax"),
        ],
        name="mnist_convnet",
    )


def vae_two_outputs() -> keras.Model:
    """A convolutional VAE (after keras.io/examples/generative/vae) as one functional model.

    The example's Sampling layer is custom; here sampling is GaussianNoise on z_mean so
    the graph uses Keras layers only. The decoder is a nested Functional model and the
    model has two outputs: the reconstruction and z_log_var (for the KL term).
    """
    latent_dim = 2
    encoder_inputs = keras.Input(shape=(28, 28, 1), name="image")
    x = layers.Conv2D(32, 3, activation="relu", strides=2, padding="same")(encoder_inputs)
    x = layers.Conv2D(64, 3, activation="relu", strides=2, padding="same")(x)
    x = layers.Flatten()(x)
    x = layers.Dense(16, activation="relu")(x)
    z_mean = layers.Dense(latent_dim, name="z_mean")(x)
    z_log_var = layers.Dense(latent_dim, name="z_log_var")(x)
    z = layers.GaussianNoise(1.0, name="z")(z_mean)

    latent_inputs = keras.Input(shape=(latent_dim,), name="z_sampling")
    y = layers.Dense(7 * 7 * 64, activation="relu")(latent_inputs)
    y = layers.Reshape((7, 7, 64))(y)
    y = layers.Conv2DTranspose(64, 3, activation="relu", strides=2, padding="same")(y)
    y = layers.Conv2DTranspose(32, 3, activation="relu", strides=2, padding="same")(y)
    decoder_outputs = layers.Conv2DTranspose(1, 3, activation="sigmoid", padding="same")(y)
    decoder = keras.Model(latent_inputs, decoder_outputs, name="decoder")

    reconstruction = decoder(z)
    return keras.Model(encoder_inputs, [reconstruction, z_log_var], name="vae_two_outputs")


def frozen_backbone_finetune() -> keras.Model:
    """keras.io/guides/transfer_learning: a frozen MobileNetV2 base under a new head."""
    base = keras.applications.MobileNetV2(
        input_shape=(96, 96, 3), alpha=0.35, include_top=False, weights=None
    )
    base.trainable = False
    inputs = keras.Input(shape=(96, 96, 3), name="image")
    x = layers.Rescaling(1.0 / 127.5, offset=-1)(inputs)
    x = base(x, training=False)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dropout(0.2)(x)
    outputs = layers.Dense(1)(x)
    return keras.Model(inputs, outputs, name="frozen_backbone_finetune")


def sequential_finetune() -> keras.Model:
    """The other common fine-tune spelling: a frozen functional base inside a Sequential."""
    image = keras.Input(shape=(64, 64, 3), name="base_input")
    x = layers.Conv2D(16, 3, strides=2, padding="same", use_bias=False)(image)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU(6.0)(x)
    y = layers.DepthwiseConv2D(3, padding="same")(x)
    x = layers.Add()([x, layers.Conv2D(16, 1)(y)])
    base = keras.Model(image, x, name="small_base")
    base.trainable = False
    return keras.Sequential(
        [
            keras.Input(shape=(64, 64, 3)),
            base,
            layers.GlobalAveragePooling2D(),
            layers.Dense(5, activation="softmax"),
        ],
        name="sequential_finetune",
    )


def siamese_shared() -> keras.Model:
    """A Siamese net: one nested tower called on both images, plus a shared Dense."""
    tower = keras.Sequential(
        [
            keras.Input(shape=(32, 32, 3)),
            layers.Conv2D(16, 3, activation="relu"),
            layers.MaxPooling2D(),
            layers.Conv2D(32, 3, activation="relu"),
            layers.GlobalAveragePooling2D(),
        ],
        name="tower",
    )
    projection = layers.Dense(16, name="projection")
    left = keras.Input(shape=(32, 32, 3), name="left")
    right = keras.Input(shape=(32, 32, 3), name="right")
    a = projection(tower(left))
    b = projection(tower(right))
    distance = layers.Subtract(name="difference")([a, b])
    similarity = layers.Dot(axes=1, normalize=True, name="cosine")([a, b])
    merged = layers.Concatenate(name="features")([distance, similarity])
    outputs = layers.Dense(1, activation="sigmoid", name="same")(merged)
    return keras.Model([left, right], outputs, name="siamese_shared")


def transformer_builtin() -> keras.Model:
    """A one-block text Transformer from Keras layers only (self-attention names x twice)."""
    maxlen, vocab, embed_dim, heads, ff_dim = 64, 5000, 32, 2, 64
    inputs = keras.Input(shape=(maxlen,), dtype="int32", name="tokens")
    x = layers.Embedding(vocab, embed_dim, name="token_embedding")(inputs)
    attn = layers.MultiHeadAttention(num_heads=heads, key_dim=embed_dim, dropout=0.1, name="mha")(
        x, x
    )
    x = layers.LayerNormalization(epsilon=1e-6, name="ln1")(layers.Add(name="res1")([x, attn]))
    ff = layers.Dense(ff_dim, activation="relu", name="ff1")(x)
    ff = layers.Dense(embed_dim, name="ff2")(ff)
    x = layers.LayerNormalization(epsilon=1e-6, name="ln2")(layers.Add(name="res2")([x, ff]))
    x = layers.GlobalAveragePooling1D()(x)
    outputs = layers.Dense(2, activation="softmax", name="probs")(x)
    return keras.Model(inputs, outputs, name="transformer_builtin")


@keras.saving.register_keras_serializable(package="keras_io")
class TransformerBlock(layers.Layer):
    """keras.io/examples/nlp/text_classification_with_transformer (custom layer)."""

    def __init__(self, embed_dim: int, num_heads: int, ff_dim: int, rate: float = 0.1, **kw: Any):
        super().__init__(**kw)
        self.embed_dim, self.num_heads, self.ff_dim, self.rate = embed_dim, num_heads, ff_dim, rate
        self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.ffn = keras.Sequential(
            [layers.Dense(ff_dim, activation="relu"), layers.Dense(embed_dim)]
        )
        self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
        self.dropout1 = layers.Dropout(rate)
        self.dropout2 = layers.Dropout(rate)

    def call(self, inputs: Any) -> Any:
        attn_output = self.dropout1(self.att(inputs, inputs))
        out1 = self.layernorm1(inputs + attn_output)
        return self.layernorm2(out1 + self.dropout2(self.ffn(out1)))

    def get_config(self) -> dict[str, Any]:
        config: dict[str, Any] = super().get_config()
        config.update(
            embed_dim=self.embed_dim, num_heads=self.num_heads, ff_dim=self.ff_dim, rate=self.rate
        )
        return config


@keras.saving.register_keras_serializable(package="keras_io")
class TokenAndPositionEmbedding(layers.Layer):
    """keras.io/examples/nlp/text_classification_with_transformer (custom layer)."""

    def __init__(self, maxlen: int, vocab_size: int, embed_dim: int, **kw: Any):
        super().__init__(**kw)
        self.maxlen, self.vocab_size, self.embed_dim = maxlen, vocab_size, embed_dim
        self.token_emb = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

    def call(self, x: Any) -> Any:
        positions = keras.ops.arange(start=0, stop=keras.ops.shape(x)[-1], step=1)
        return self.token_emb(x) + self.pos_emb(positions)

    def get_config(self) -> dict[str, Any]:
        config: dict[str, Any] = super().get_config()
        config.update(maxlen=self.maxlen, vocab_size=self.vocab_size, embed_dim=self.embed_dim)
        return config


def text_transformer_custom() -> keras.Model:
    """The keras.io text-classification Transformer, custom layers and all."""
    maxlen, vocab_size, embed_dim, num_heads, ff_dim = 200, 20000, 32, 2, 32
    inputs = layers.Input(shape=(maxlen,))
    x = TokenAndPositionEmbedding(maxlen, vocab_size, embed_dim)(inputs)
    x = TransformerBlock(embed_dim, num_heads, ff_dim)(x)
    x = layers.GlobalAveragePooling1D()(x)
    x = layers.Dropout(0.1)(x)
    x = layers.Dense(20, activation="relu")(x)
    x = layers.Dropout(0.1)(x)
    outputs = layers.Dense(2, activation="softmax")(x)
    return keras.Model(inputs=inputs, outputs=outputs, name="text_transformer_custom")


def mixed_float16_cnn() -> keras.Model:
    """keras.io/guides/mixed_precision: float16 compute, the softmax output kept in float32."""
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        inputs = keras.Input(shape=(32, 32, 3), name="image")
        x = layers.Conv2D(32, 3, padding="same", activation="relu")(inputs)
        x = layers.BatchNormalization()(x)
        x = layers.MaxPooling2D()(x)
        x = layers.Conv2D(64, 3, padding="same", activation="relu")(x)
        x = layers.GlobalAveragePooling2D()(x)
        x = layers.Dense(10)(x)
        outputs = layers.Activation("softmax", dtype="float32", name="predictions")(x)
        return keras.Model(inputs, outputs, name="mixed_float16_cnn")
    finally:
        keras.mixed_precision.set_global_policy("float32")


EXAMPLES: dict[str, Callable[[], keras.Model]] = {
    "unet_oxford_pets": unet_oxford_pets,
    "seq2seq_lstm": seq2seq_lstm,
    "bidirectional_lstm_imdb": bidirectional_lstm_imdb,
    "mnist_convnet": mnist_convnet,
    "vae_two_outputs": vae_two_outputs,
    "frozen_backbone_finetune": frozen_backbone_finetune,
    "siamese_shared": siamese_shared,
    "sequential_finetune": sequential_finetune,
    "transformer_builtin": transformer_builtin,
    "text_transformer_custom": text_transformer_custom,
    "mixed_float16_cnn": mixed_float16_cnn,
}
# Variable dimensions the tests resolve (as a user would with --input-shape NAME=...).
INPUT_SHAPES: dict[str, dict[str, list[int]]] = {
    "seq2seq_lstm": {"encoder_inputs": [40, 71], "decoder_inputs": [50, 93]},
    "bidirectional_lstm_imdb": {"tokens": [200]},
    "mobilenetv3small": {"input_layer": [224, 224, 3]},  # Keras leaves it (None, None, 3)
}
# The one fixture also written as a .keras archive (weights included, so keep it small).
ARCHIVES = ("mnist_convnet",)
CUSTOM_CLASSES = ("TransformerBlock", "TokenAndPositionEmbedding")
# The tf.keras 2 set: one of each way its older format records a graph.
TF_KERAS_FIXTURES = (
    "resnet50",
    "mnist_convnet",
    "seq2seq_lstm",
    "siamese_shared",
    "sequential_finetune",
    "frozen_backbone_finetune",
    "transformer_builtin",
    "vae_two_outputs",
    "mixed_float16_cnn",
)


def _count(weights: list[Any]) -> int:
    return int(sum(int(w.numpy().size) for w in weights))


def _custom_params(model: keras.Model) -> dict[str, int]:
    """Parameters held by custom-class layers (what --skip-unknown leaves out)."""
    return {
        layer.name: int(layer.count_params())
        for layer in model.layers
        if type(layer).__name__ in CUSTOM_CLASSES
    }


def write_fixture(name: str, build: Callable[[], keras.Model]) -> None:
    keras.backend.clear_session()
    model = build()
    (OUT / f"{name}.json").write_text(model.to_json(), encoding="utf-8")
    counts: dict[str, Any] = {
        "keras_version": keras.__version__,
        "backend": keras.backend.backend(),
        "total": int(model.count_params()),
        "trainable": _count(model.trainable_weights),
        "non_trainable": _count(model.non_trainable_weights),
    }
    if name in INPUT_SHAPES:
        counts["input_shapes"] = INPUT_SHAPES[name]
    custom = _custom_params(model)
    if custom:
        counts["custom_layer_params"] = custom
    (OUT / f"{name}.counts.json").write_text(json.dumps(counts, indent=2) + "\n", encoding="utf-8")
    if name in ARCHIVES and not LEGACY:
        model.save(OUT / f"{name}.keras")  # weights of a small model: about 150 kB
    print(f"{name}: total {counts['total']:,} trainable {counts['trainable']:,}")


README_HEAD = """# Keras fixtures

Written by real Keras with `scripts/gen_keras_fixtures.py` (see its docstring for the
two virtual environments): Keras 3 on the torch backend for the top folder, tf.keras 2
(the `tf-keras` package on TensorFlow) for `tf2/`. Each model file has a
`NAME.counts.json` beside it with Keras' own `count_params()` (total), the trainable
and non-trainable totals, the input shapes the tests give for dimensions Keras leaves
`None`, and, for the custom-layer fixture, the parameters its custom layers hold (what
`--skip-unknown` leaves out). Nothing here is edited by hand (this table included);
rerun the script instead.

| file | Keras | count_params() | trainable | notes |
|---|---|---:|---:|---|
"""


def write_readme() -> None:
    """tests/fixtures/keras/README.md: every fixture with the counts Keras printed."""
    root = OUT.parent if LEGACY else OUT
    rows = []
    for path in sorted([*root.glob("*.counts.json"), *root.glob("tf2/*.counts.json")]):
        counts = json.loads(path.read_text(encoding="utf-8"))
        name = str(path.relative_to(root)).removesuffix(".counts.json")
        files = [f for f in (f"{name}.json", f"{name}.keras") if (root / f).exists()]
        notes = []
        if "input_shapes" in counts:
            shapes = ", ".join(f"{k}={v}" for k, v in counts["input_shapes"].items())
            notes.append(f"input_shapes {shapes}")
        if "custom_layer_params" in counts:
            custom = ", ".join(f"{k} {v:,}" for k, v in counts["custom_layer_params"].items())
            notes.append(f"custom layers {custom}")
        rows.append(
            f"| {' + '.join(files)} | {counts['keras_version']} | {counts['total']:,} "
            f"| {counts['trainable']:,} | {'; '.join(notes)} |"
        )
    (root / "README.md").write_text(README_HEAD + "\n".join(rows) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="regenerate only this fixture")
    parser.add_argument("--list", action="store_true", help="print the fixture names")
    parser.add_argument(
        "--tf-keras", action="store_true", help="write tf.keras 2 fixtures (run with tf-keras)"
    )
    args = parser.parse_args(argv)
    builders = {**APPLICATIONS, **EXAMPLES}
    if args.tf_keras:
        builders = {name: builders[name] for name in TF_KERAS_FIXTURES}
    if args.list:
        print("\n".join(builders))
        return 0
    wanted = args.only or list(builders)
    unknown = [n for n in wanted if n not in builders]
    if unknown:
        print(f"unknown fixture {unknown[0]!r} (see --list)", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    for name in wanted:
        write_fixture(name, builders[name])
    write_readme()
    return 0


if __name__ == "__main__":
    sys.exit(main())
