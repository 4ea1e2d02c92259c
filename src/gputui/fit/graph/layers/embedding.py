"""Embedding tables: a gather forward, an index_add backward, no gradient to the ids."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gputui.fit.graph.layer_args import Args, LayerArgError
from gputui.fit.graph.layers.common import Shape, prod
from gputui.fit.graph.layers.dense import lora, with_lora
from gputui.fit.graph.stats import LayerStats


def embedding(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(
        raw,
        {"input_dim", "output_dim", "mask_zero", "input_length", "sparse", "lora_rank"}
        | {"lora_alpha"},
        frozenset({"embeddings_initializer", "embeddings_regularizer", "embeddings_constraint"})
        | frozenset({"weights"}),
    )
    vocab = a.integer("input_dim")  # the vocabulary, not the input (Keras' name)
    dim = a.integer("output_dim")
    a.flag("mask_zero", False)
    a.flag("sparse", False)
    if a.has("input_length"):
        length = a.integer("input_length")
        if not shape or shape[-1] != length:
            got = shape[-1] if shape else "none"
            raise LayerArgError(
                "input_length", f"{length} differs from the input's length {got} (input {shape})"
            )
    if a.has("weights") and not isinstance(a.get("weights"), list):
        raise LayerArgError("weights", "must be a list of arrays")
    out = (*shape, dim)
    stats = LayerStats(
        0,
        "",
        out,
        vocab * dim,
        0,
        0,
        param_tensors=(vocab * dim,),
        # the dense gradient is built from the per-position gradients (index_add)
        backward_transient=0,
        no_input_grad=True,
    )
    low = lora(a, vocab, dim)
    return with_lora(stats, low[0], vocab, dim, True) if low else stats


def position_embedding(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"sequence_length", "initializer"}, frozenset())
    length = a.integer("sequence_length")
    if len(shape) < 2:
        raise LayerArgError("input shape", f"needs (steps, features) per sample, got {shape}")
    if shape[-2] > length:
        raise LayerArgError(
            "sequence_length", f"{length} is shorter than the input's {shape[-2]} steps"
        )
    params = length * shape[-1]
    # the table broadcast to the input's shape: a view of the weights, no gradient to x
    return LayerStats(
        0,
        "",
        shape,
        params,
        0,
        0,
        output_is_view=True,
        no_input_grad=True,
        param_tensors=(params,),
    )


def token_and_position_embedding(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(
        raw,
        {"vocabulary_size", "sequence_length", "embedding_dim", "tie_weights", "mask_zero"}
        | {"embeddings_initializer"},
        frozenset(),
    )
    vocab = a.integer("vocabulary_size")
    length = a.integer("sequence_length")
    dim = a.integer("embedding_dim")
    a.flag("tie_weights", True)
    a.flag("mask_zero", False)
    if len(shape) != 1:
        raise LayerArgError("input shape", f"needs (steps,) token ids per sample, got {shape}")
    if shape[0] > length:
        raise LayerArgError(
            "sequence_length", f"{length} is shorter than the input's {shape[0]} steps"
        )
    out = (shape[0], dim)
    el = prod(out)
    # token lookup (a new tensor), plus the broadcast positions: the sum is the output
    return LayerStats(
        0,
        "",
        out,
        (vocab + length) * dim,
        0,
        el,
        forward_transient=el,
        no_input_grad=True,
        param_tensors=(vocab * dim, length * dim),
    )
