"""Convolutions (1-3D, transposed, depthwise, separable): Keras' output shapes and kernel
sizes, the input each keeps for its kernel's gradient, and cuDNN/oneDNN scratch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gputui.fit.graph.layer_args import Args, LayerArgError
from gputui.fit.graph.layers.activations import fold_activation, parse_activation
from gputui.fit.graph.layers.common import SPATIAL, Shape, check_rank, prod
from gputui.fit.graph.stats import LayerStats, Saved

Window = tuple[Shape, Shape, Shape, str]  # kernel, strides, dilation, padding


def conv_length(length: int, kernel: int, stride: int, dilation: int, padding: str) -> int:
    """Keras' compute_conv_output_shape for one spatial axis."""
    if padding in ("same", "causal"):
        return (length - 1) // stride + 1
    return (length - dilation * (kernel - 1) - 1) // stride + 1


def _spatial(
    shape: Shape, kernel: Shape, strides: Shape, dilation: Shape, padding: str, field: str
) -> Shape:
    out = tuple(
        conv_length(n, k, s, d, padding)
        for n, k, s, d in zip(shape, kernel, strides, dilation, strict=True)
    )
    if any(n <= 0 for n in out):
        raise LayerArgError(
            field,
            f"{kernel} with strides {strides}, dilation {dilation} and padding {padding!r} "
            f"does not fit the input {shape}: output size would be {out}",
        )
    return out


_CONV_ARGS = {
    "filters",
    "kernel_size",
    "strides",
    "padding",
    "data_format",
    "dilation_rate",
    "groups",
    "activation",
    "use_bias",
}


def _window(a: Args, rank: int, paddings: tuple[str, ...] = ("valid", "same")) -> Window:
    """A sliding window's kernel, strides, dilation and padding, as Keras reads them."""
    kernel = a.ints("kernel_size", None, rank)
    strides = a.ints("strides", 1, rank)
    dilation = a.ints("dilation_rate", 1, rank)
    return kernel, strides, dilation, a.choice("padding", "valid", paddings)


def _no_strided_dilation(strides: tuple[int, ...], dilation: tuple[int, ...]) -> None:
    if max(strides) > 1 and max(dilation) > 1:
        raise LayerArgError("strides", "strides > 1 cannot be combined with dilation_rate > 1")


def conv_workspace(
    in_elements: int, out_elements: int, folded: dict[str, Any], forward: int | None = None
) -> dict[str, Any]:
    """Convolutions need scratch the size of their input and output, forward and backward.

    oneDNN (CPU) reorders input, output and gradients into blocked layouts; cuDNN
    (CUDA) asks for an algorithm workspace. Backward: one input- and one output-sized
    buffer beyond the tensors themselves covers both (checked against PyTorch on CPU).
    Forward (`forward`, default the larger of input and output): the input's reorder
    is freed before PyTorch makes the output and copies the blocked result into it,
    and that result is freed before a fused activation makes its own output, so
    beside the input and the output only one of the two is alive at a time (seen in
    the CPU profiler's allocation events, with and without autograd).
    """
    out = dict(folded)
    out["forward_transient"] = max(in_elements, out_elements) if forward is None else forward
    out["backward_transient"] = folded.get("backward_transient", 0) + in_elements + out_elements
    return out


def _kernel_stats(
    out: Shape,
    kernel_params: int,
    bias: int,
    flops: int,
    in_elements: int,
    act: str,
    forward: int | None = None,
) -> LayerStats:
    """A layer with one kernel (and a bias) slid over its input: it keeps its input for
    the kernel's gradient, autocast copies its weights, and its backward makes a
    kernel-sized gradient; the fused activation and the workspace are the conv path's."""
    out_el = prod(out)
    return LayerStats(
        index=0,
        type="",
        output_shape=out,
        trainable_params=kernel_params + bias,
        non_trainable_params=0,
        flops=flops,
        saves_input=True,
        param_tensors=(kernel_params, bias) if bias else (kernel_params,),
        matmul_params=kernel_params + bias,
        backward_param_transient=kernel_params,
        **conv_workspace(in_elements, out_el, fold_activation(act, out_el), forward),
    )


def conv(raw: Mapping[str, Any], shape: Shape, rank: int) -> LayerStats:
    a = Args(raw, _CONV_ARGS, frozenset())
    a.data_format()
    check_rank(shape, rank + 1, SPATIAL[rank])
    filters = a.integer("filters")
    paddings = ("valid", "same", "causal") if rank == 1 else ("valid", "same")
    kernel, strides, dilation, padding = _window(a, rank, paddings)
    groups = a.integer("groups", 1)
    use_bias = a.flag("use_bias", True)
    act = parse_activation(raw)
    _no_strided_dilation(strides, dilation)
    cin = shape[-1]
    # PyTorch's Conv1d wants (batch, channels, steps): Keras' (steps, channels) input
    # is transposed, and the convolution makes a contiguous copy, forward and backward
    transposed_copy = prod(shape) if rank == 1 else 0
    if cin % groups or filters % groups:
        raise LayerArgError(
            "groups", f"{groups} must divide both the input channels ({cin}) and filters"
        )
    spatial = _spatial(shape[:-1], kernel, strides, dilation, padding, "kernel_size")
    out = (*spatial, filters)
    kernel_params = prod(kernel) * (cin // groups) * filters
    flops = 2 * prod(kernel) * (cin // groups) * prod(out)
    bias = filters if use_bias else 0
    in_el = prod(shape)
    # the transposed copy lives through the whole call, beside the reorder (Conv1D)
    forward = transposed_copy + max(in_el, prod(out))
    return _kernel_stats(out, kernel_params, bias, flops, in_el + transposed_copy, act, forward)


def conv1d(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    return conv(raw, shape, 1)


def conv2d(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    return conv(raw, shape, 2)


def conv3d(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    return conv(raw, shape, 3)


def conv2d_transpose(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, (_CONV_ARGS - {"groups"}) | {"output_padding"}, frozenset())
    a.data_format()
    check_rank(shape, 3, "height, width, channels")
    filters = a.integer("filters")
    kernel, strides, dilation, padding = _window(a, 2)
    use_bias = a.flag("use_bias", True)
    act = parse_activation(raw)
    out_pad = a.ints("output_padding", None, 2, minimum=0) if a.has("output_padding") else None
    spatial = []
    for i, (n, k, s, d) in enumerate(zip(shape[:-1], kernel, strides, dilation, strict=True)):
        dk = k + (k - 1) * (d - 1)
        if out_pad is None:
            length = n * s + max(dk - s, 0) if padding == "valid" else n * s
        else:
            if out_pad[i] >= s:
                raise LayerArgError("output_padding", "must be smaller than strides")
            pad = dk // 2 if padding == "same" else 0
            length = (n - 1) * s + dk - 2 * pad + out_pad[i]
        spatial.append(length)
    out = (*spatial, filters)
    kernel_params = prod(kernel) * shape[-1] * filters
    bias = filters if use_bias else 0
    flops = 2 * kernel_params * prod(shape[:-1])
    # PyTorch's CPU transposed convolution holds three output-sized buffers at once
    # (its output, oneDNN's result and a copy), bias or not; where the input is the
    # larger, its reorder and one output-sized buffer (the profiler's allocation events)
    out_el = prod(out)
    forward = max(prod(shape) + out_el, 2 * out_el)
    return _kernel_stats(out, kernel_params, bias, flops, prod(shape), act, forward)


_DW_ARGS = {
    "kernel_size",
    "strides",
    "padding",
    "depth_multiplier",
    "data_format",
    "dilation_rate",
    "activation",
    "use_bias",
}


_DW_COSMETIC = frozenset(
    {
        "depthwise_initializer",
        "depthwise_regularizer",
        "depthwise_constraint",
        "pointwise_initializer",
        "pointwise_regularizer",
        "pointwise_constraint",
    }
)


def _depthwise_common(a: Args, shape: Shape) -> tuple[Shape, int, int]:
    a.data_format()
    check_rank(shape, 3, "height, width, channels")
    kernel, strides, dilation, padding = _window(a, 2)
    _no_strided_dilation(strides, dilation)
    multiplier = a.integer("depth_multiplier", 1)
    spatial = _spatial(shape[:-1], kernel, strides, dilation, padding, "kernel_size")
    return spatial, prod(kernel), multiplier


def depthwise_conv2d(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, _DW_ARGS, _DW_COSMETIC)
    spatial, k, m = _depthwise_common(a, shape)
    use_bias = a.flag("use_bias", True)
    act = parse_activation(raw)
    channels = shape[-1] * m
    out = (*spatial, channels)
    bias = channels if use_bias else 0
    return _kernel_stats(out, k * channels, bias, 2 * k * prod(out), prod(shape), act)


def separable_conv2d(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, _DW_ARGS | {"filters"}, _DW_COSMETIC)
    spatial, k, m = _depthwise_common(a, shape)
    filters = a.integer("filters")
    use_bias = a.flag("use_bias", True)
    act = parse_activation(raw)
    mid = shape[-1] * m
    out = (*spatial, filters)
    depthwise = k * mid
    pointwise = mid * filters
    bias = filters if use_bias else 0
    mid_el = prod(spatial) * mid
    out_el = prod(out)
    folded = fold_activation(act, out_el)
    # the depthwise result is the pointwise convolution's input: kept for backward
    folded["internal_saved"] = (Saved(mid_el), *folded.get("internal_saved", ()))
    in_el = prod(shape)
    # forward: the depthwise convolution (input, its reorder or the mid, as a plain
    # convolution), then the pointwise one with the mid held: the mid's reorder or the
    # output's oneDNN result beside the mid and the output
    folded = conv_workspace(in_el, mid_el, folded, mid_el + max(mid_el, out_el))
    # backward runs pointwise (gradients of output and mid, scratch mid + out), then
    # depthwise (gradients of mid and input, scratch input + mid); the layer's phase
    # already counts the output and input gradients
    peak = max(2 * out_el + 2 * mid_el, 2 * in_el + 2 * mid_el)
    folded["backward_transient"] = max(peak - out_el - in_el, 0)
    folded["backward_param_transient"] = depthwise + pointwise
    return LayerStats(
        index=0,
        type="",
        output_shape=out,
        trainable_params=depthwise + pointwise + bias,
        non_trainable_params=0,
        flops=2 * k * mid_el + 2 * mid * out_el,
        saves_input=True,
        param_tensors=tuple(p for p in (depthwise, pointwise, bias) if p),
        matmul_params=depthwise + pointwise + bias,
        **folded,
    )
