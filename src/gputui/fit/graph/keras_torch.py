"""Keras 3 on its torch backend: what it keeps alive beyond PyTorch eager.

Keras runs the same torch kernels, but (measured in benchmarks/keras_runtime.md):

* its functional executor (`Functional._run_through_graph`, Sequential models too)
  keeps every layer's output in a dict until the call returns, so no output is freed
  at its last reader during a forward;
* its convolutions and poolings take channels-last tensors: each call copies its
  input into a channels-first (then a channels-last-strided) buffer, which a
  convolution keeps for its backward in place of its input, and copies its kernel,
  which autograd keeps too (oneDNN reorders that copy again while the layer runs
  unless the kernel is 1x1: fitted to the measured keras.applications models, where
  the largest kernel's call is the inference peak);
* its own BatchNormalization is torch ops, not `batch_norm`: in training
  `(x - mean)` is multiplied in place by a factor that needs a gradient, so autograd
  keeps a full-size copy of it besides the layer's input;
* `train_step` zeroes the gradients after the forward: the previous step's gradients
  are alive during the whole forward;
* its optimizers update every variable at once with `torch._foreach` ops: Adam and
  AdamW hold three parameter-sized temporaries at once (m * alpha, sqrt(v) + eps and
  their quotient), RMSprop three (v + eps, g * lr and their quotient), SGD none.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gputui.fit.core.precision import Precision
from gputui.fit.graph.network import Network, Node
from gputui.fit.graph.stats import LayerStats, Saved

# parameter-sized temporaries of one optimizer step, per trainable parameter
_OPTIMIZER_TEMPS = {"adam": 3, "adamw": 3, "rmsprop": 3, "momentum": 0, "sgd": 0}


_CONVOLUTIONS = frozenset(
    {
        "Conv1D",
        "Conv2D",
        "Conv3D",
        "DepthwiseConv1D",
        "DepthwiseConv2D",
        "SeparableConv1D",
        "SeparableConv2D",
        "Conv1DTranspose",
        "Conv2DTranspose",
        "Conv3DTranspose",
    }
)
_POOLINGS = frozenset(
    {
        "MaxPooling1D",
        "MaxPooling2D",
        "MaxPooling3D",
        "AveragePooling1D",
        "AveragePooling2D",
        "AveragePooling3D",
    }
)


def _pointwise(raw: Mapping[str, Any]) -> bool:
    size = raw.get("kernel_size", 1)
    sizes = size if isinstance(size, list | tuple) else [size]
    return all(k == 1 for k in sizes)


def _keras_stats(node: Node, training: bool) -> LayerStats:
    st = node.stats
    in_el = math.prod(node.input_shapes[0]) if node.input_shapes else 0
    if st.type in _CONVOLUTIONS or st.type in _POOLINGS:
        kept = st.internal_saved
        if st.saves_input:
            kept = (*kept, Saved(in_el))  # the copy, not the input, is what it keeps
        # the copy lives through the call, with or without autograd
        no_grad = None if st.inference_transient is None else st.inference_transient + in_el
        st = replace(
            st,
            saves_input=False,
            internal_saved=kept,
            forward_transient=st.forward_transient + in_el,
            inference_transient=no_grad,
        )
    if st.type in _CONVOLUTIONS:
        reorders = 0 if _pointwise(node.raw) else 1
        kernels = sum(st.param_tensors) - (st.param_tensors[-1] if len(st.param_tensors) > 1 else 0)
        if training:  # autograd keeps the kernel's copy until the layer's backward
            st = replace(
                st,
                fixed_saved=st.fixed_saved + kernels,
                fixed_transient=st.fixed_transient + reorders * kernels,
            )
        else:
            st = replace(st, fixed_transient=st.fixed_transient + (1 + reorders) * kernels)
    if st.type == "BatchNormalization":
        st = replace(st, internal_saved=(*st.internal_saved, Saved(st.output_elements)))
    return st


def keras_network(net: Network, training: bool) -> Network:
    """`net` with Keras' own layers' autograd bookkeeping in place of PyTorch's."""
    nodes = tuple(replace(node, stats=_keras_stats(node, training)) for node in net.nodes)
    return replace(net, nodes=nodes)


def optimizer_temp(optimizer: str, trainable: int, p: Precision) -> int:
    """Bytes of the temporaries of one Keras optimizer step on the torch backend."""
    return _OPTIMIZER_TEMPS.get(optimizer, 0) * trainable * p.state_bytes
