"""Every layer type the fit checker knows, and the one entry point that analyses a layer.

`analyse_layer` takes the shapes of all of a layer's inputs (one for most layers;
initial states for recurrent layers; several for merges and attention), applies
`trainable = false`, and bounds every shape and parameter count so that nothing
downstream meets a number too large to mean anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from gputui.fit.graph.layer_args import MAX_DIM, MAX_ELEMENTS, MAX_PARAMS, LayerArgError
from gputui.fit.graph.layers import (
    activations,
    applications,
    conv,
    dense,
    embedding,
    inputs,
    merge,
    normalization,
    pooling,
    preprocessing,
    recurrent,
    regularization,
    reshaping,
)
from gputui.fit.graph.layers.attention import ATTENTION_MODES, multi_head_attention
from gputui.fit.graph.layers.attention import attention as attention_layer
from gputui.fit.graph.layers.common import MultiFn, Shape, SingleFn
from gputui.fit.graph.layers.wrappers import time_distributed
from gputui.fit.graph.stats import LayerStats

# Keras' pooling layers: name prefix, the function, max or average; each in 1-3 dims.
_POOLING = (
    ("Max", pooling.pool, "max"),
    ("Average", pooling.pool, "avg"),
    ("GlobalAverage", pooling.global_pool, "avg"),
    ("GlobalMax", pooling.global_pool, "max"),
)

# Layers of one input, by family.
SINGLE_INPUT: dict[str, SingleFn] = {
    "InputLayer": inputs.input_layer,
    # dense and embedding
    "Dense": dense.dense,
    "EinsumDense": dense.einsum_dense,
    "Embedding": embedding.embedding,
    "PositionEmbedding": embedding.position_embedding,
    "TokenAndPositionEmbedding": embedding.token_and_position_embedding,
    # convolution
    "Conv1D": conv.conv1d,
    "Conv2D": conv.conv2d,
    "Conv3D": conv.conv3d,
    "Conv2DTranspose": conv.conv2d_transpose,
    "DepthwiseConv2D": conv.depthwise_conv2d,
    "SeparableConv2D": conv.separable_conv2d,
    # pooling
    **{
        f"{name}Pooling{rank}D": partial(fn, rank=rank, kind=kind)
        for name, fn, kind in _POOLING
        for rank in (1, 2, 3)
    },
    # normalization
    "BatchNormalization": normalization.batch_normalization,
    "LayerNormalization": normalization.layer_normalization,
    "GroupNormalization": normalization.group_normalization,
    "UnitNormalization": normalization.unit_normalization,
    # activations
    "Activation": activations.activation,
    "ReLU": activations.relu,
    "LeakyReLU": activations.leaky_relu,
    "Softmax": activations.softmax,
    "ELU": activations.elu,
    "PReLU": activations.prelu,
    # regularization
    "Dropout": regularization.dropout,
    "SpatialDropout1D": regularization.spatial_dropout(1),
    "SpatialDropout2D": regularization.spatial_dropout(2),
    "SpatialDropout3D": regularization.spatial_dropout(3),
    "GaussianNoise": regularization.gaussian_noise,
    "GaussianDropout": regularization.gaussian_dropout,
    "ActivityRegularization": regularization.activity_regularization,
    # reshaping
    "Flatten": reshaping.flatten,
    "Reshape": reshaping.reshape,
    "Permute": reshaping.permute,
    "RepeatVector": reshaping.repeat_vector,
    "Cropping1D": reshaping.cropping(1),
    "Cropping2D": reshaping.cropping(2),
    "Cropping3D": reshaping.cropping(3),
    "ZeroPadding1D": reshaping.zero_padding(1),
    "ZeroPadding2D": reshaping.zero_padding2d,
    "ZeroPadding3D": reshaping.zero_padding(3),
    "UpSampling1D": reshaping.up_sampling1d,
    "UpSampling2D": reshaping.up_sampling2d,
    "UpSampling3D": reshaping.up_sampling3d,
    # preprocessing
    "Resizing": preprocessing.resizing,
    "Rescaling": preprocessing.rescaling,
    "Normalization": preprocessing.normalization,
    "CenterCrop": preprocessing.center_crop,
    # keras.applications' own layers
    "LayerScale": applications.layer_scale,
    "StochasticDepth": applications.stochastic_depth,
}
# Layers whose extra inputs are initial states.
RECURRENT: dict[str, MultiFn] = {
    "SimpleRNN": recurrent.recurrent_layer("SimpleRNN"),
    "LSTM": recurrent.recurrent_layer("LSTM"),
    "GRU": recurrent.recurrent_layer("GRU"),
    "Bidirectional": recurrent.bidirectional,
}
# Layers of several inputs (MultiHeadAttention, which also takes the attention mode,
# is dispatched in analyse_layer).
MULTI_INPUT: dict[str, MultiFn] = {
    "Add": merge.elementwise("Add"),
    "Subtract": merge.elementwise("Subtract"),
    "Multiply": merge.elementwise("Multiply"),
    "Average": merge.elementwise("Average"),
    "Maximum": merge.elementwise("Maximum"),
    "Minimum": merge.elementwise("Minimum"),
    "Concatenate": merge.concatenate,
    "Dot": merge.dot,
    "Attention": lambda r, s: attention_layer(r, s, additive=False),
    "AdditiveAttention": lambda r, s: attention_layer(r, s, additive=True),
    "CustomScaleLayer": applications.custom_scale,
}
WRAPPERS = ("TimeDistributed",)
KNOWN: tuple[str, ...] = tuple(
    sorted({*SINGLE_INPUT, *RECURRENT, *MULTI_INPUT, "MultiHeadAttention", *WRAPPERS})
)


def is_known(kind: object) -> bool:
    return isinstance(kind, str) and kind in KNOWN


def analyse_layer(
    index: int,
    raw: Mapping[str, Any],
    shapes: tuple[Shape, ...],
    *,
    attention: str = "auto",
) -> LayerStats:
    """One layer's stats for inputs of `shapes`; raises LayerArgError(field, reason)."""
    kind = raw.get("type")
    if not is_known(kind):
        raise LayerArgError("type", f"unknown layer type {kind!r} (known: {', '.join(KNOWN)})")
    assert isinstance(kind, str)
    trainable = raw.get("trainable", True)
    if not isinstance(trainable, bool):
        raise LayerArgError("trainable", f"must be true or false, got {trainable!r}")
    if attention not in ATTENTION_MODES:
        raise LayerArgError("attention", f"must be one of {', '.join(ATTENTION_MODES)}")
    if kind in SINGLE_INPUT or kind in WRAPPERS:
        if len(shapes) != 1:
            raise LayerArgError("inputs", f"{kind} takes one input, got {len(shapes)}")
        if kind == "TimeDistributed":
            stats = time_distributed(_inner)(raw, shapes[0])
        else:
            stats = SINGLE_INPUT[kind](raw, shapes[0])
    elif kind in RECURRENT:
        stats = RECURRENT[kind](raw, shapes)
    elif kind == "MultiHeadAttention":
        stats = multi_head_attention(raw, shapes, attention)
    else:
        stats = MULTI_INPUT[kind](raw, shapes)
    _bounded(stats)
    if trainable is False:
        stats = freeze(stats)
    return replace(stats, index=index, type=kind)


def _inner(index: int, raw: Mapping[str, Any], shapes: tuple[Shape, ...]) -> LayerStats:
    return analyse_layer(index, raw, shapes)


def freeze(stats: LayerStats) -> LayerStats:
    """`trainable = false`: every weight becomes non-trainable (no gradient, no state)."""
    return replace(
        stats,
        trainable_params=0,
        non_trainable_params=stats.params,
        saves_input_if_trainable=False,
        backward_param_transient=0,
    )


def _bounded(stats: LayerStats) -> None:
    for shape in (stats.output_shape, *stats.extra_outputs):
        for d in shape:
            if not 1 <= d <= MAX_DIM:
                what = "is empty" if d < 1 else f"has a dimension over {MAX_DIM}"
                raise LayerArgError(
                    "output shape",
                    f"{tuple(shape)} {what}: every dimension must be between 1 and at most "
                    f"{MAX_DIM}",
                )
        n = 1
        for d in shape:
            n *= d
        if n > MAX_ELEMENTS:
            raise LayerArgError(
                "output shape",
                f"{tuple(shape)} holds {n:.3g} values per sample; at most {MAX_ELEMENTS:.3g}",
            )
    if stats.params > MAX_PARAMS:
        raise LayerArgError(
            "params", f"{stats.params:.3g} parameters in one layer; at most {MAX_PARAMS:.3g}"
        )
