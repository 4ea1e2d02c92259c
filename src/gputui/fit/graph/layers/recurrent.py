"""Recurrent layers (SimpleRNN, LSTM, GRU) and Bidirectional: per-step gates kept for
backward, initial states as extra inputs, oneDNN's extra workspace on CPU."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from gputui.fit.graph.layer_args import Args, LayerArgError
from gputui.fit.graph.layers.activations import parse_activation
from gputui.fit.graph.layers.common import Shape, check_rank, prod
from gputui.fit.graph.stats import LayerStats, Saved

_RNN_ARGS = {
    "units",
    "activation",
    "use_bias",
    "dropout",
    "recurrent_dropout",
    "return_sequences",
    "return_state",
    "go_backwards",
    "stateful",
    "unroll",
    "time_major",
    "zero_output_for_mask",
    "use_cudnn",
}


_RNN_COSMETIC = frozenset(
    {
        "recurrent_initializer",
        "recurrent_regularizer",
        "recurrent_constraint",
    }
)


# Per timestep, how many `units`-sized tensors the cell keeps for backward (PyTorch's
# unfused cells): SimpleRNN its new state; LSTM the 4 gates, c, tanh(c), previous h;
# GRU the 3 hidden-side gates, previous h, new gate and two copies made by in-place ops.
_GATES = {"SimpleRNN": 1, "LSTM": 4, "GRU": 3}


_SAVED_PER_STEP = {"SimpleRNN": 1, "LSTM": 7, "GRU": 7}


STATES = {"SimpleRNN": 1, "LSTM": 2, "GRU": 1}


def _recurrent(
    kind: str,
    raw: Mapping[str, Any],
    shape: Shape,
    directions: int,
    states: tuple[Shape, ...] = (),
) -> LayerStats:
    extra = {"recurrent_activation", "unit_forget_bias"} if kind in ("LSTM", "GRU") else set()
    if kind == "GRU":
        extra.add("reset_after")
    a = Args(raw, _RNN_ARGS | extra, _RNN_COSMETIC)
    check_rank(shape, 2, "timesteps, features")
    units = a.integer("units")
    use_bias = a.flag("use_bias", True)
    parse_activation(raw)
    parse_activation({"activation": raw.get("recurrent_activation", "sigmoid")})
    a.number("dropout", 0.0, 0.0, 1.0)
    a.number("recurrent_dropout", 0.0, 0.0, 1.0)
    for name in ("go_backwards", "stateful", "unroll", "time_major", "zero_output_for_mask"):
        a.flag(name, False)
    a.flag("unit_forget_bias", True)
    if a.flag("time_major", False):
        raise LayerArgError("time_major", "true is not supported (inputs are batch-major)")
    cudnn = a.get("use_cudnn", "auto")
    if cudnn != "auto" and not isinstance(cudnn, bool):
        raise LayerArgError("use_cudnn", f'must be "auto", true or false, got {cudnn!r}')
    return_state = a.flag("return_state", False)
    n_states = STATES[kind] * directions
    if states:
        if len(states) != n_states:
            raise LayerArgError(
                "inputs",
                f"{kind} takes {n_states} initial state(s) after its input, got {len(states)}",
            )
        for s in states:
            if s != (units,):
                raise LayerArgError(
                    "inputs", f"an initial state must have shape ({units},), got {s}"
                )
    sequences = a.flag("return_sequences", False)
    steps, features = shape
    gates = _GATES[kind]
    kernel = gates * units * features
    recurrent = gates * units * units
    if not use_bias:
        bias = 0
    elif kind == "GRU" and a.flag("reset_after", True):
        bias = 2 * gates * units
    else:
        bias = gates * units
    params = kernel + recurrent + bias
    width = units * directions
    out = (steps, width) if sequences else (width,)
    per_step = _SAVED_PER_STEP[kind] * units * directions
    # PyTorch runs the recurrence time-major: a batch-first input is copied to a
    # contiguous (steps, batch, features) tensor, and that copy is what the input
    # projection keeps. The full output sequence is always built, even when only
    # the last state is returned.
    sequence_out = 0 if sequences else steps * width
    # On CPU, PyTorch hands LSTM to oneDNN, whose training workspace holds about
    # 11 more `units`-sized vectors per step than the unfused cell (measured with
    # a grid of steps/units/features: 10.2 to 10.6, rounded up).
    onednn = 11 * steps * units * directions if kind == "LSTM" else 0
    return LayerStats(
        index=0,
        type="",
        output_shape=out,
        trainable_params=params * directions,
        non_trainable_params=0,
        flops=2 * steps * (kernel + recurrent) * directions,
        internal_saved=(
            Saved(steps * per_step + units * directions),
            Saved(steps * features),
            Saved(onednn, "cpu_only"),
        ),
        # the input projection of every step is computed at once; each direction's
        # outputs exist before the merge
        forward_transient=steps * gates * units * directions
        + sequence_out
        + (prod(out) if directions > 1 else 0),
        # without autograd: the time-major input copy next to the input projection,
        # then the projection next to the step states and the stacked output
        inference_transient=max(
            steps * features + steps * gates * units * directions - prod(out),
            steps * gates * units * directions + steps * units * directions + sequence_out,
        ),
        backward_transient=steps * gates * units * directions,
        param_tensors=tuple(p for p in (kernel, recurrent, bias) for _ in range(directions) if p),
        matmul_params=params * directions,
        extra_outputs=tuple((units,) for _ in range(n_states)) if return_state else (),
        saved_slots=(0,),
        # oneDNN keeps its reordered copy of the weights for backward (measured: one
        # weight-sized tensor per LSTM call on CPU)
        fixed_saved_cpu=params * directions if kind == "LSTM" else 0,
    )


def recurrent_layer(kind: str) -> Callable[[Mapping[str, Any], tuple[Shape, ...]], LayerStats]:
    def analyse(raw: Mapping[str, Any], shapes: tuple[Shape, ...]) -> LayerStats:
        return _recurrent(kind, raw, shapes[0], 1, shapes[1:])

    return analyse


def bidirectional(raw: Mapping[str, Any], shapes: tuple[Shape, ...]) -> LayerStats:
    a = Args(raw, {"layer", "merge_mode", "backward_layer", "weights"}, frozenset())
    inner = a.get("layer")
    if not isinstance(inner, dict) or inner.get("type") not in _GATES:
        raise LayerArgError(
            "layer", 'must be an inline table of a recurrent layer, e.g. { type = "LSTM", ... }'
        )
    if a.has("backward_layer"):
        raise LayerArgError("backward_layer", "is not supported; the forward layer is mirrored")
    mode = a.get("merge_mode", "concat")
    if mode not in ("concat", "sum", "mul", "ave"):
        raise LayerArgError("merge_mode", f"must be concat, sum, mul or ave, got {mode!r}")
    try:
        Args(inner, set(inner), frozenset())  # trainable and cosmetic arguments of the inner layer
        stats = _recurrent(str(inner["type"]), inner, shapes[0], 2, shapes[1:])
    except LayerArgError as exc:
        raise LayerArgError(f"layer.{exc.field}", exc.reason) from None
    if mode != "concat":
        out = (*stats.output_shape[:-1], stats.output_shape[-1] // 2)
        stats = replace(stats, output_shape=out)
    return stats
