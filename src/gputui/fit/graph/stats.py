"""What the fit checker knows about one layer once its shape has been worked out.

Sizes are per sample (element counts) so that every memory figure is an affine
function of the batch size; bytes are applied later by the precision policy.
The memory-relevant fields describe what autograd keeps for the backward pass,
which is what decides the training peak, not the layer's output alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

# "act": activation dtype; "mask": dropout mask (1 byte on CUDA, activation dtype on CPU);
# "index": int64 max-pool indices; "stat": fp32 per-position statistics (LayerNorm mean/rstd).
# "cpu_only": activation dtype, kept only by a CPU kernel (oneDNN's LSTM workspace).
# "amp_copy": fp32 copy of a 16-bit input that autocast makes for an fp32-only op.
SavedKind = Literal["act", "mask", "index", "stat", "cpu_only", "amp_copy"]


@dataclass(frozen=True, slots=True)
class Saved:
    """A tensor a layer keeps for its own backward pass, beyond its input/output."""

    elements: int  # per sample
    kind: SavedKind = "act"


@dataclass(frozen=True, slots=True)
class LayerStats:
    index: int  # position in the model's `layers` list (0-based)
    type: str
    output_shape: tuple[int, ...]  # per sample, channels-last like Keras
    trainable_params: int
    non_trainable_params: int
    flops: int  # forward FLOPs per sample (a multiply-add counts 2)
    # Autograd bookkeeping, valid when the layer is part of a graph that needs gradients.
    saves_input: bool = False  # its input tensor must outlive the forward pass
    saves_input_if_trainable: bool = False  # ... only when its own weights need gradients
    saves_output: bool = False  # its output tensor must outlive the forward pass
    internal_saved: tuple[Saved, ...] = ()  # tensors only this layer holds for backward
    output_is_view: bool = False  # shares storage with its input (Flatten, Reshape, ...)
    forward_transient: int = 0  # elements alive only while the layer runs forward
    backward_transient: int = 0  # elements of extra gradient buffers during its backward
    backward_param_transient: int = 0  # parameter-sized buffers during its backward (RNNs)
    param_tensors: tuple[int, ...] = ()  # element count of each weight tensor
    matmul_params: int = 0  # weights autocast copies to 16 bit (conv, dense, recurrent)
    # an activation fused into the layer (Dense/Conv `activation=`): which tensor its
    # backward keeps ("output", "input" = the pre-activation, "none" = linear/absent).
    # Its backward runs first and frees its gradient and saved tensor before the
    # layer's main backward starts.
    fused_activation: str = "none"
    # elements alive while the layer runs without autograd, when that differs from
    # forward_transient (recurrent layers: step states are no longer saved, but exist)
    inference_transient: int | None = None
    # autocast runs this op in fp32 (layer_norm, softmax, exp, softplus): under AMP
    # its output is 4 bytes per element, not 2
    autocast_fp32: bool = False
    # outputs beyond the first (a recurrent layer's states with return_state), per sample
    extra_outputs: tuple[tuple[int, ...], ...] = ()
    # the gradients of the inputs are views of the output's gradient, no new buffer
    # (Add, Concatenate, Average: PyTorch passes the same tensor, or slices of it, on)
    grad_alias: bool = False
    # the output does not depend on the input's values: no gradient flows back
    # (PositionEmbedding returns its table broadcast to the input's shape)
    no_input_grad: bool = False
    # which inputs `saves_input` / `saves_input_if_trainable` keep; None: all of them
    saved_slots: tuple[int, ...] | None = None
    # elements (not per sample) kept for backward while the graph lives, in the weights'
    # dtype: LoRA's merged kernel `W + a @ b * scale`, computed at every call
    fixed_saved: int = 0
    # the same, kept only by a CPU kernel: oneDNN's LSTM keeps its weights reordered
    # into its own layout for the backward pass
    fixed_saved_cpu: int = 0
    # elements (not per sample) alive while the layer runs, forward and backward (LoRA's
    # low-rank product and its gradient)
    fixed_transient: int = 0
    # A layer made of several autograd ops whose backward frees its saved tensors
    # step by step (attention): per step, (elements of its own saved tensors still
    # alive, elements of gradients alive besides the output's, whether the inputs'
    # new gradients exist then). The worst step is the layer's backward moment.
    backward_steps: tuple[tuple[int, int, bool], ...] = ()
    notes: tuple[str, ...] = field(default=())
    # int64 elements made while the layer runs without autograd (a 2-D/3-D max pool's
    # indices: PyTorch's no-grad path skips them only in 1-D)
    inference_index: int = 0

    @property
    def params(self) -> int:
        return self.trainable_params + self.non_trainable_params

    @property
    def output_elements(self) -> int:
        n = 1
        for d in self.output_shape:
            n *= d
        return n
