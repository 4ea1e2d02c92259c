"""Keras layers: output shape, parameter count, FLOPs and what autograd keeps.

Shapes and parameter counts follow Keras 3 (and Keras 2, where they agree) so
totals match `model.summary()`. What each layer keeps for the backward pass is
modelled on PyTorch's autograd formulas (derivatives.yaml), the framework the
estimate is measured against: linear/conv keep their input, relu/sigmoid/tanh/
softmax keep their output, leaky_relu/elu/gelu keep their input, dropout keeps a
mask, max-pool its input and int64 indices, batch-norm its input, layer-norm its
input plus per-position mean and rstd, recurrent cells their gates per step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from gputui.fit.graph.args import MAX_DIM, Args, LayerArgError
from gputui.fit.graph.stats import LayerStats, Saved

Shape = tuple[int, ...]
Window = tuple[Shape, Shape, Shape, str]  # kernel, strides, dilation, padding

# Which tensor each activation's backward needs (PyTorch): its output, its input, or none.
ACTIVATIONS: dict[str, str] = {
    "linear": "none",
    "relu": "output",
    "sigmoid": "output",
    "tanh": "output",
    "softmax": "output",
    "log_softmax": "output",
    "exponential": "output",
    "elu": "input",
    "selu": "input",
    "gelu": "input",
    "silu": "input",
    "swish": "input",
    "softplus": "input",
    "softsign": "input",
    "hard_sigmoid": "input",
    "hard_silu": "input",
    "hard_swish": "input",
    "relu6": "input",
    "leaky_relu": "input",
    "mish": "input",
    "celu": "input",
}


def _prod(shape: Shape) -> int:
    return math.prod(shape) if shape else 1


def _activation(raw: Mapping[str, Any], name: str = "activation") -> str:
    value = raw.get(name)
    if value is None:
        return "linear"
    if not isinstance(value, str) or value.lower() not in ACTIVATIONS:
        raise LayerArgError(name, f"unknown activation {value!r} (known: {', '.join(ACTIVATIONS)})")
    return value.lower()


# Ops PyTorch's autocast runs in fp32 whatever their input (its "fp32 list").
AUTOCAST_FP32 = frozenset({"softmax", "log_softmax", "exponential", "softplus"})


def _fold_activation(act: str, out_elements: int) -> dict[str, Any]:
    """The autograd cost of an activation fused into a Dense/Conv layer."""
    keeps = ACTIVATIONS[act]
    if act in AUTOCAST_FP32:
        return {
            "saves_output": keeps == "output",
            "internal_saved": (Saved(out_elements),) if keeps == "input" else (),
            "forward_transient": out_elements,
            "fused_activation": keeps,
            "autocast_fp32": True,
        }
    if keeps == "output":
        # the pre-activation lives only while the activation runs
        return {"saves_output": True, "forward_transient": out_elements, "fused_activation": keeps}
    if keeps == "input":
        return {"internal_saved": (Saved(out_elements),), "fused_activation": keeps}
    return {}


def _conv_workspace(in_elements: int, out_elements: int, folded: dict[str, Any]) -> dict[str, Any]:
    """Convolutions need scratch the size of their input and output, forward and backward.

    oneDNN (CPU) reorders input, output and gradients into blocked layouts; cuDNN
    (CUDA) asks for an algorithm workspace. One input- and one output-sized buffer
    beyond the tensors themselves covers both (checked against PyTorch on CPU).
    """
    out = dict(folded)
    out["forward_transient"] = in_elements + out_elements
    out["backward_transient"] = folded.get("backward_transient", 0) + in_elements + out_elements
    return out


_SPATIAL = {1: "steps, channels", 2: "height, width, channels", 3: "depth, height, width, channels"}


def keras_axis(value: Any, shape: Shape, field: str = "axis") -> int:
    """A Keras axis (0 is the batch, negative counts from the end) as an index into `shape`."""
    rank = len(shape)
    if isinstance(value, bool) or not isinstance(value, int) or not -rank <= value <= rank:
        raise LayerArgError(field, f"must be an axis of the input (batch, *{shape}), got {value!r}")
    if value == 0:
        raise LayerArgError(field, "axis 0 is the batch axis")
    return value - 1 if value > 0 else rank + value


def _rank(shape: Shape, rank: int, what: str) -> None:
    if len(shape) != rank:
        raise LayerArgError(
            "input shape",
            f"expects a {rank}-D input per sample ({what}), got {shape}",
        )


def conv_length(length: int, kernel: int, stride: int, dilation: int, padding: str) -> int:
    """Keras' compute_conv_output_shape for one spatial axis."""
    if padding in ("same", "causal"):
        return (length - 1) // stride + 1
    return (length - dilation * (kernel - 1) - 1) // stride + 1


def pool_length(length: int, pool: int, stride: int, padding: str) -> int:
    if padding == "same":
        return (length - 1) // stride + 1
    return (length - pool) // stride + 1


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


def _kernel_stats(
    out: Shape, kernel_params: int, bias: int, flops: int, in_elements: int, act: str
) -> LayerStats:
    """A layer with one kernel (and a bias) slid over its input: it keeps its input for
    the kernel's gradient, autocast copies its weights, and its backward makes a
    kernel-sized gradient; the fused activation and the workspace are the conv path's."""
    out_el = _prod(out)
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
        **_conv_workspace(in_elements, out_el, _fold_activation(act, out_el)),
    )


def _conv(raw: Mapping[str, Any], shape: Shape, rank: int) -> LayerStats:
    a = Args(raw, _CONV_ARGS, frozenset())
    a.data_format()
    _rank(shape, rank + 1, _SPATIAL[rank])
    filters = a.integer("filters")
    paddings = ("valid", "same", "causal") if rank == 1 else ("valid", "same")
    kernel, strides, dilation, padding = _window(a, rank, paddings)
    groups = a.integer("groups", 1)
    use_bias = a.flag("use_bias", True)
    act = _activation(raw)
    _no_strided_dilation(strides, dilation)
    cin = shape[-1]
    # PyTorch's Conv1d wants (batch, channels, steps): Keras' (steps, channels) input
    # is transposed, and the convolution makes a contiguous copy, forward and backward
    transposed_copy = _prod(shape) if rank == 1 else 0
    if cin % groups or filters % groups:
        raise LayerArgError(
            "groups", f"{groups} must divide both the input channels ({cin}) and filters"
        )
    spatial = _spatial(shape[:-1], kernel, strides, dilation, padding, "kernel_size")
    out = (*spatial, filters)
    kernel_params = _prod(kernel) * (cin // groups) * filters
    flops = 2 * _prod(kernel) * (cin // groups) * _prod(out)
    bias = filters if use_bias else 0
    return _kernel_stats(out, kernel_params, bias, flops, _prod(shape) + transposed_copy, act)


def conv1d(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    return _conv(raw, shape, 1)


def conv2d(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    return _conv(raw, shape, 2)


def conv3d(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    return _conv(raw, shape, 3)


def conv2d_transpose(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, (_CONV_ARGS - {"groups"}) | {"output_padding"}, frozenset())
    a.data_format()
    _rank(shape, 3, "height, width, channels")
    filters = a.integer("filters")
    kernel, strides, dilation, padding = _window(a, 2)
    use_bias = a.flag("use_bias", True)
    act = _activation(raw)
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
    kernel_params = _prod(kernel) * shape[-1] * filters
    bias = filters if use_bias else 0
    flops = 2 * kernel_params * _prod(shape[:-1])
    return _kernel_stats(out, kernel_params, bias, flops, _prod(shape), act)


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
    _rank(shape, 3, "height, width, channels")
    kernel, strides, dilation, padding = _window(a, 2)
    _no_strided_dilation(strides, dilation)
    multiplier = a.integer("depth_multiplier", 1)
    spatial = _spatial(shape[:-1], kernel, strides, dilation, padding, "kernel_size")
    return spatial, _prod(kernel), multiplier


def depthwise_conv2d(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, _DW_ARGS, _DW_COSMETIC)
    spatial, k, m = _depthwise_common(a, shape)
    use_bias = a.flag("use_bias", True)
    act = _activation(raw)
    channels = shape[-1] * m
    out = (*spatial, channels)
    bias = channels if use_bias else 0
    return _kernel_stats(out, k * channels, bias, 2 * k * _prod(out), _prod(shape), act)


def separable_conv2d(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, _DW_ARGS | {"filters"}, _DW_COSMETIC)
    spatial, k, m = _depthwise_common(a, shape)
    filters = a.integer("filters")
    use_bias = a.flag("use_bias", True)
    act = _activation(raw)
    mid = shape[-1] * m
    out = (*spatial, filters)
    depthwise = k * mid
    pointwise = mid * filters
    bias = filters if use_bias else 0
    mid_el = _prod(spatial) * mid
    out_el = _prod(out)
    folded = _fold_activation(act, out_el)
    # the depthwise result is the pointwise convolution's input: kept for backward
    folded["internal_saved"] = (Saved(mid_el), *folded.get("internal_saved", ()))
    in_el = _prod(shape)
    folded = _conv_workspace(in_el, mid_el, folded)
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


def lora(a: Args, rows: int, cols: int) -> tuple[int, float] | None:
    """Keras 3's `lora_rank`: the kernel (rows x cols) frozen, a (rows x r) and b (r x cols) train."""
    if not a.has("lora_rank"):
        if a.has("lora_alpha"):
            raise LayerArgError("lora_alpha", "needs lora_rank")
        return None
    rank = a.integer("lora_rank")
    alpha = a.number("lora_alpha", float(rank), 1e-12, math.inf)
    return rank, alpha


def _with_lora(stats: LayerStats, rank: int, rows: int, cols: int, table: bool) -> LayerStats:
    """LoRA as Keras computes it: every call rebuilds `kernel + (a @ b) * alpha / rank`.

    The kernel stops training; a and b train. The merged kernel is a new tensor at
    every call, and the matmul that uses it keeps it for backward (an embedding
    lookup keeps only the indices); making it needs the product and its scaled copy.
    """
    kernel = rows * cols
    low = rank * (rows + cols)
    others = stats.trainable_params - kernel  # the bias keeps training
    return replace(
        stats,
        trainable_params=others + low,
        non_trainable_params=stats.non_trainable_params + kernel,
        param_tensors=tuple(p for p in (rows * rank, rank * cols, others) if p),
        fixed_saved=0 if table else kernel,
        fixed_transient=2 * kernel,
        backward_param_transient=stats.backward_param_transient + kernel,
        # the input is kept because the merged kernel needs a gradient
        saves_input=not table,
        saves_input_if_trainable=False,
    )


def dense(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"units", "activation", "use_bias", "lora_rank", "lora_alpha"}, frozenset())
    units = a.integer("units")
    use_bias = a.flag("use_bias", True)
    act = _activation(raw)
    if not shape:
        raise LayerArgError("input shape", "Dense needs at least a 1-D input per sample")
    # Keras applies Dense to the last axis of a higher-rank input
    out = (*shape[:-1], units)
    kernel = shape[-1] * units
    bias = units if use_bias else 0
    out_el = _prod(out)
    stats = LayerStats(
        index=0,
        type="",
        output_shape=out,
        trainable_params=kernel + bias,
        non_trainable_params=0,
        flops=2 * shape[-1] * out_el,
        saves_input_if_trainable=True,
        param_tensors=(kernel, bias) if bias else (kernel,),
        matmul_params=kernel + bias,
        **_fold_activation(act, out_el),
    )
    low = lora(a, shape[-1], units)
    return _with_lora(stats, low[0], shape[-1], units, False) if low else stats


def _pool(raw: Mapping[str, Any], shape: Shape, rank: int, kind: str) -> LayerStats:
    a = Args(raw, {"pool_size", "strides", "padding", "data_format"}, frozenset())
    a.data_format()
    _rank(shape, rank + 1, _SPATIAL[rank])
    pool = a.ints("pool_size", 2, rank)
    strides = a.ints("strides", pool, rank) if a.has("strides") else pool
    padding = a.choice("padding", "valid", ("valid", "same"))
    spatial = tuple(
        pool_length(n, p, s, padding) for n, p, s in zip(shape[:-1], pool, strides, strict=True)
    )
    if any(n <= 0 for n in spatial):
        raise LayerArgError(
            "pool_size",
            f"{pool} with strides {strides} does not fit the input {shape}: "
            f"output size would be {spatial}",
        )
    out = (*spatial, shape[-1])
    out_el = _prod(out)
    saved = (Saved(out_el, "index"),) if kind == "max" else ()
    return LayerStats(
        index=0,
        type="",
        output_shape=out,
        trainable_params=0,
        non_trainable_params=0,
        flops=_prod(pool) * out_el,
        saves_input=True,
        internal_saved=saved,
    )


def _global_pool(raw: Mapping[str, Any], shape: Shape, rank: int, kind: str) -> LayerStats:
    a = Args(raw, {"data_format", "keepdims"}, frozenset())
    a.data_format()
    _rank(shape, rank + 1, _SPATIAL[rank])
    keepdims = a.flag("keepdims", False)
    out = (*([1] * rank), shape[-1]) if keepdims else (shape[-1],)
    return LayerStats(
        index=0,
        type="",
        output_shape=tuple(out),
        trainable_params=0,
        non_trainable_params=0,
        flops=_prod(shape),
        saves_input=kind == "max",  # amax keeps input and result; mean keeps only sizes
    )


def flatten(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    Args(raw, {"data_format"}, frozenset()).data_format()
    return LayerStats(0, "", (_prod(shape),), 0, 0, 0, output_is_view=True)


def reshape(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"target_shape"}, frozenset())
    target = a.get("target_shape")
    if (
        not isinstance(target, list)
        or not target
        or not all(
            isinstance(d, int) and not isinstance(d, bool) and (d > 0 or d == -1) for d in target
        )
    ):
        raise LayerArgError("target_shape", f"must be a list of positive integers, got {target!r}")
    total = _prod(shape)
    if target.count(-1) > 1:
        raise LayerArgError("target_shape", "only one dimension can be -1")
    known = _prod(tuple(d for d in target if d != -1))
    if -1 in target:
        if total % known:
            raise LayerArgError("target_shape", f"cannot reshape {shape} into {tuple(target)}")
        target = [total // known if d == -1 else d for d in target]
    elif known != total:
        raise LayerArgError(
            "target_shape",
            f"cannot reshape {shape} ({total} values) into {tuple(target)} ({known} values)",
        )
    return LayerStats(0, "", tuple(target), 0, 0, 0, output_is_view=True)


def dropout(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"rate", "noise_shape"}, frozenset())
    if "rate" not in raw:
        raise LayerArgError("rate", "is required")
    rate = a.number("rate", 0.0, 0.0, 1.0)
    mask = noise_elements(a, shape)
    if rate == 0.0:
        return LayerStats(0, "", shape, 0, 0, 0, output_is_view=True)
    el = _prod(shape)
    if mask is not None:
        # Keras' seeded path: a broadcast bernoulli mask, then where(mask, x / keep, 0)
        return LayerStats(0, "", shape, 0, 0, el, internal_saved=(Saved(mask, "mask"),))
    return LayerStats(0, "", shape, 0, 0, el, internal_saved=(Saved(el, "mask"),))


def noise_elements(a: Args, shape: Shape) -> int | None:
    """Per-sample elements of a Dropout `noise_shape` (batch axis first, 1 = broadcast)."""
    if not a.has("noise_shape"):
        return None
    value = a.get("noise_shape")
    if (
        not isinstance(value, list)
        or len(value) != len(shape) + 1
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in value)
    ):
        raise LayerArgError(
            "noise_shape",
            f"must be a list of {len(shape) + 1} positive integers (batch axis first) "
            f"for the input {shape}, got {value!r}",
        )
    for d, n in zip(value[1:], shape, strict=True):
        if d not in (1, n):
            raise LayerArgError(
                "noise_shape",
                f"{value} does not broadcast to the input {shape} (use 1 or the size)",
            )
    return _prod(tuple(value[1:]))


def batch_normalization(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(
        raw,
        {"axis", "momentum", "epsilon", "center", "scale", "synchronized", "renorm"}
        | {"renorm_momentum", "renorm_clipping"},
        frozenset(
            {
                "beta_initializer",
                "gamma_initializer",
                "moving_mean_initializer",
                "moving_variance_initializer",
                "beta_regularizer",
                "gamma_regularizer",
                "beta_constraint",
                "gamma_constraint",
            }
        ),
    )
    axis = keras_axis(a.get("axis", -1), shape)
    a.number("momentum", 0.99, 0.0, 1.0 + 1e-12)
    a.number("epsilon", 1e-3, 1e-300, math.inf)
    a.flag("synchronized", False)
    if a.flag("renorm", False):
        raise LayerArgError("renorm", "true (batch renormalization) is not supported")
    a.number("renorm_momentum", 0.99, 0.0, 1.0 + 1e-12)
    if a.has("renorm_clipping") and not isinstance(a.get("renorm_clipping"), dict):
        raise LayerArgError("renorm_clipping", "must be a table of rmax/rmin/dmax")
    channels = shape[axis]
    trainable = channels * (int(a.flag("center", True)) + int(a.flag("scale", True)))
    el = _prod(shape)
    return LayerStats(
        0,
        "",
        shape,
        trainable,
        2 * channels,
        5 * el,
        saves_input=True,
        param_tensors=tuple(channels for _ in range(trainable // channels)),
        backward_transient=0,
    )


def layer_normalization(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(
        raw,
        {"axis", "epsilon", "center", "scale", "rms_scaling"},
        frozenset({"beta_initializer", "gamma_initializer", "beta_regularizer"})
        | frozenset({"gamma_regularizer", "beta_constraint", "gamma_constraint"}),
    )
    axis = a.get("axis", -1)
    listed = axis if isinstance(axis, list) else [axis]
    if not listed:
        raise LayerArgError("axis", "must name at least one axis")
    axes = [keras_axis(x, shape) for x in listed]
    if len(set(axes)) != len(axes):
        dup = next(x for x in axes if axes.count(x) > 1)
        raise LayerArgError("axis", f"lists axis {dup + 1} twice ({axis!r})")
    a.number("epsilon", 1e-3, 1e-300, math.inf)
    normalized = _prod(tuple(shape[x] for x in axes))
    center = a.flag("center", True) and not a.flag("rms_scaling", False)
    count = int(center) + int(a.flag("scale", True))
    el = _prod(shape)
    positions = el // normalized
    return LayerStats(
        0,
        "",
        shape,
        count * normalized,
        0,
        8 * el,
        saves_input=True,
        internal_saved=(Saved(positions, "stat"), Saved(positions, "stat"), Saved(el, "amp_copy")),
        autocast_fp32=True,
        param_tensors=tuple(normalized for _ in range(count)),
    )


def _activation_layer(act: str, shape: Shape) -> LayerStats:
    keeps = ACTIVATIONS[act]
    el = _prod(shape)
    if keeps == "none":
        return LayerStats(0, "", shape, 0, 0, 0, output_is_view=True)
    return LayerStats(
        0,
        "",
        shape,
        0,
        0,
        4 * el,
        saves_input=keeps == "input",
        saves_output=keeps == "output",
        autocast_fp32=act in AUTOCAST_FP32,
    )


def activation(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    Args(raw, {"activation"}, frozenset())
    if "activation" not in raw:
        raise LayerArgError("activation", "is required")
    return _activation_layer(_activation(raw), shape)


def relu(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    """Keras 3's ReLU as its torch backend runs it (ReLU.static_call).

    max_value = 6 alone is relu6 (keeps its input); another max_value is relu then
    clip (the relu output is kept by both); a threshold multiplies by a float mask
    (keeps input and mask); a negative_slope alone is leaky_relu, with the others
    it adds relu(-x + threshold), which keeps its output.
    """
    a = Args(raw, {"max_value", "negative_slope", "threshold"}, frozenset())
    max_value = a.number("max_value", 0.0, 0.0, math.inf) if a.has("max_value") else None
    slope = a.number("negative_slope", 0.0, 0.0, math.inf)
    threshold = a.number("threshold", 0.0, 0.0, math.inf)
    if max_value is None and not slope and not threshold:
        return _activation_layer("relu", shape)
    if slope and max_value is None and not threshold:
        return _activation_layer("leaky_relu", shape)
    if max_value == 6 and not slope and not threshold:
        return _activation_layer("relu6", shape)
    el = _prod(shape)
    kept = 0
    saves_input = False
    if slope:
        kept += 1  # relu(-x + threshold)'s output
    if threshold:
        saves_input = True
        kept += 1  # the float mask x > threshold
        if max_value is not None:
            kept += 1  # x * mask, kept by the clip
    elif max_value == 6:
        saves_input = True
    else:
        kept += 1  # relu's output, kept by relu and by the clip after it
    return LayerStats(
        0,
        "",
        shape,
        0,
        0,
        4 * el,
        saves_input=saves_input,
        internal_saved=(Saved(kept * el),) if kept else (),
        forward_transient=2 * el if slope else el,
    )


def leaky_relu(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"negative_slope", "alpha"}, frozenset())
    for name in ("negative_slope", "alpha"):
        if a.has(name):
            a.number(name, 0.3, 0.0, math.inf)
    return _activation_layer("leaky_relu", shape)


def up_sampling2d(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"size", "data_format", "interpolation"}, frozenset())
    a.data_format()
    _rank(shape, 3, "height, width, channels")
    size = a.ints("size", 2, 2)
    a.choice("interpolation", "nearest", ("nearest", "bilinear", "bicubic", "lanczos3", "lanczos5"))
    out = (shape[0] * size[0], shape[1] * size[1], shape[2])
    return LayerStats(0, "", out, 0, 0, _prod(out))


def zero_padding2d(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(raw, {"padding", "data_format"}, frozenset())
    a.data_format()
    _rank(shape, 3, "height, width, channels")
    value = a.get("padding", 1)
    if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
        if len(value) != 2:
            raise LayerArgError("padding", f"must be [[top, bottom], [left, right]], got {value!r}")
        pads = [Args({"p": v}, {"p"}, frozenset()).ints("p", None, 2, minimum=0) for v in value]
    else:
        hw = a.ints("padding", 1, 2, minimum=0)
        pads = [(hw[0], hw[0]), (hw[1], hw[1])]
    out = (shape[0] + sum(pads[0]), shape[1] + sum(pads[1]), shape[2])
    return LayerStats(0, "", out, 0, 0, 0)


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
    return _with_lora(stats, low[0], vocab, dim, True) if low else stats


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
    _rank(shape, 2, "timesteps, features")
    units = a.integer("units")
    use_bias = a.flag("use_bias", True)
    _activation(raw)
    _activation({"activation": raw.get("recurrent_activation", "sigmoid")})
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
        + (_prod(out) if directions > 1 else 0),
        # without autograd: the time-major input copy next to the input projection,
        # then the projection next to the step states and the stacked output
        inference_transient=max(
            steps * features + steps * gates * units * directions - _prod(out),
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


def _shape_arg(value: Any, field: str, skip_batch: bool = False) -> Shape:
    items = value[1:] if skip_batch and isinstance(value, list) and value else value
    if skip_batch and isinstance(value, list) and value:
        first = value[0]
        if first is not None and (isinstance(first, bool) or not isinstance(first, int)):
            raise LayerArgError(field, f"must be a list [batch, *shape], got {value!r}")
    if (
        not isinstance(value, list)
        or not isinstance(items, list)
        or not items
        or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 < d <= MAX_DIM for d in items
        )
    ):
        raise LayerArgError(
            field,
            f"must be a list of positive integers (at most {MAX_DIM}), got {value!r}",
        )
    return tuple(items)


def declared_input(raw: Mapping[str, Any]) -> tuple[str, Shape] | None:
    """The input shape a layer table declares (Keras 2 style or InputLayer), with its field.

    A table may give it more than once (`shape` and Keras 2's `input_shape`); every
    form must agree, else the disagreement is an error naming both fields.
    """
    kind = raw.get("type")
    found: list[tuple[str, Shape]] = []
    fields = ("shape", "batch_shape", "input_shape", "batch_input_shape")
    for field in fields if kind == "InputLayer" else fields[2:]:
        if field in raw:
            found.append(
                (field, _shape_arg(raw[field], field, skip_batch=field.startswith("batch")))
            )
    if "input_dim" in raw and kind != "Embedding":
        dim = raw["input_dim"]
        if isinstance(dim, bool) or not isinstance(dim, int) or not 0 < dim <= MAX_DIM:
            raise LayerArgError("input_dim", f"must be a positive integer, got {dim!r}")
        found.append(("input_dim", (dim,)))
    for field, shape in found[1:]:
        if shape != found[0][1]:
            raise LayerArgError(
                field, f"{list(shape)} differs from {found[0][0]} {list(found[0][1])}"
            )
    return found[0] if found else None


def declared_batch(raw: Mapping[str, Any]) -> tuple[str, int] | None:
    """A batch size the layer fixes (the first entry of batch_shape, Keras 2's batch_size)."""
    for field in ("batch_shape", "batch_input_shape"):
        value = raw.get(field)
        first = value[0] if isinstance(value, list) and value else None
        if isinstance(first, int) and not isinstance(first, bool):
            return field, first
    size = raw.get("batch_size")
    if size is not None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise LayerArgError("batch_size", f"must be a positive integer, got {size!r}")
        return "batch_size", size
    return None


def input_layer(raw: Mapping[str, Any], shape: Shape) -> LayerStats:
    a = Args(
        raw,
        {"shape", "batch_shape", "batch_input_shape", "sparse", "ragged", "input_tensor"}
        | {"optional", "input_shape"},
        frozenset(),
    )
    for name in ("sparse", "ragged", "optional"):
        a.flag(name, False)
    if a.has("input_tensor"):
        raise LayerArgError("input_tensor", "is not supported in a models file")
    declared_input(raw)
    return LayerStats(0, "", shape, 0, 0, 0, output_is_view=True)


LayerFn = Callable[[Mapping[str, Any], Shape], LayerStats]

# Layers of one input; recurrent layers and Bidirectional (which also take initial
# states), merges and attention are dispatched in registry.py.
LAYERS: dict[str, LayerFn] = {
    "InputLayer": input_layer,
    "Dense": dense,
    "Conv1D": conv1d,
    "Conv2D": conv2d,
    "Conv2DTranspose": conv2d_transpose,
    "DepthwiseConv2D": depthwise_conv2d,
    "SeparableConv2D": separable_conv2d,
    "MaxPooling1D": lambda r, s: _pool(r, s, 1, "max"),
    "MaxPooling2D": lambda r, s: _pool(r, s, 2, "max"),
    "AveragePooling1D": lambda r, s: _pool(r, s, 1, "avg"),
    "AveragePooling2D": lambda r, s: _pool(r, s, 2, "avg"),
    "GlobalAveragePooling1D": lambda r, s: _global_pool(r, s, 1, "avg"),
    "GlobalAveragePooling2D": lambda r, s: _global_pool(r, s, 2, "avg"),
    "GlobalMaxPooling1D": lambda r, s: _global_pool(r, s, 1, "max"),
    "GlobalMaxPooling2D": lambda r, s: _global_pool(r, s, 2, "max"),
    "Flatten": flatten,
    "Reshape": reshape,
    "Dropout": dropout,
    "BatchNormalization": batch_normalization,
    "LayerNormalization": layer_normalization,
    "Activation": activation,
    "ReLU": relu,
    "LeakyReLU": leaky_relu,
    "UpSampling2D": up_sampling2d,
    "ZeroPadding2D": zero_padding2d,
    "Embedding": embedding,
}
