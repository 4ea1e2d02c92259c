"""The layer graph's op adapter: one layer call's kernels, forward and backward, as the
roofline's neutral `Op`s (fit/core/roofline.py times them; it knows no layer types).

Why here and not in the core: which kernels a Dense, a convolution, a normalisation or
a recurrent layer runs, and what each moves, is knowledge of the layer engine's
`LayerStats`; attention has its own adapter (attention_ops.py), the whole step
(network, optimizer, GANs) is put together in speed.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from gputui.fit.core.precision import Precision
from gputui.fit.core.roofline import Op, OpClass, Pass, tensor_aligned
from gputui.fit.core.software import DEFAULT_SOFTWARE, Software
from gputui.fit.graph.stats import LayerStats


@dataclass(frozen=True, slots=True)
class LayerIO:
    """What the adapter needs beyond a layer's own stats: its inputs, and what autograd does."""

    in_elements: int  # per sample, all inputs together
    in_channels: int  # last axis of the first input (channels-last)
    in_bytes: int  # bytes per sample of all inputs as stored (fp32 data, int64 ids, activations)
    needs_input_grad: bool  # an input depends on weights being trained
    trains: bool  # this call's weights get a gradient (a shared layer's every call does)
    training: bool
    label: str = ""  # how reports name the layer, e.g. "Conv2D 'conv1' (layers[2])"
    index: int = -1  # the node's position in its graph (-1: the stats' own index)


_MATMUL_TYPES = frozenset({"Dense", "Conv1D", "Conv2D", "Conv2DTranspose", "SeparableConv2D"})
CONV_TYPES = _MATMUL_TYPES - {"Dense"}
_NORM_TYPES = frozenset({"BatchNormalization", "LayerNormalization", "GroupNormalization"})
_RNN_TYPES = frozenset({"SimpleRNN", "LSTM", "GRU", "Bidirectional"})
_REDUCTIONS = frozenset(
    {
        "GlobalAveragePooling1D",
        "GlobalAveragePooling2D",
        "GlobalAveragePooling3D",
        "GlobalMaxPooling1D",
        "GlobalMaxPooling2D",
        "GlobalMaxPooling3D",
        "Softmax",
    }
)


@dataclass(frozen=True, slots=True)
class Kernels:
    """Appends one layer call's kernels to `ops`, each named after the layer."""

    ops: list[Op]
    label: str
    index: int
    network: str

    def add(
        self,
        what: str,
        cls: OpClass,
        pas: Pass,
        flops: float,
        nbytes: float,
        kernels: int = 1,
        tensor: bool = False,
        tensor_only: bool = False,
        gemm: tuple[int, int] = (0, 0),
        split_k: bool = False,
    ) -> None:
        self.ops.append(
            Op(
                f"{self.label} {what}",
                cls,
                pas,
                flops,
                nbytes,
                kernels,
                tensor,
                self.index,
                self.network,
                self.label,
                tensor_only,
                gemm,
                split_k,
            )
        )


def layer_ops(
    layer: LayerStats,
    io: LayerIO,
    p: Precision,
    batch: int,
    network: str = "",
    sw: Software = DEFAULT_SOFTWARE,
) -> list[Op]:
    """The kernels one layer call runs in a step, forward and (when training) backward.

    Bytes are what each kernel must move through DRAM: forward reads its inputs and
    weights and writes its output; the input backward reads the output gradient
    (and weights or the saved tensor) and writes the input gradient; the weight
    backward reads the output gradient and the saved input and writes the weight
    gradient. Layers that only re-label storage (views) run nothing. With NCHW tensors
    (`sw.memory_format`), each tensor-core convolution call adds its layout transposes.
    """
    if layer.output_is_view:
        return []
    act = p.act_bytes
    out_b = 4 if (p.amp and layer.autocast_fp32) else act
    n_in = io.in_elements * batch
    n_out = layer.output_elements * batch
    x_bytes = io.in_bytes * batch
    y_bytes = n_out * out_b
    dx_bytes = 0 if layer.no_input_grad else n_in * act
    w_read = layer.matmul_params * (p.low_copy_bytes if p.amp else p.weight_bytes)
    trains = io.trains and io.training
    back_in = io.training and io.needs_input_grad and not layer.no_input_grad
    idx = io.index if io.index >= 0 else layer.index
    label = io.label or f"{layer.type} (layers[{idx}])"
    ops: list[Op] = []
    add = Kernels(ops, label, idx, network).add
    kind = layer.type
    if kind in _RNN_TYPES:
        return _recurrent_ops(layer, io, p, batch, network)
    if kind in _MATMUL_TYPES or kind == "DepthwiseConv2D" or layer.matmul_params:
        # depthwise convolutions have no reduction over channels: CUDA cores
        tensor = kind != "DepthwiseConv2D" and tensor_aligned(
            p, io.in_channels, layer.output_shape[-1]
        )
        flops = layer.flops * batch
        # as GEMMs (implicit for convolutions): one output row per position of the batch
        gemm_fwd = gemm_bwd = (0, 0)
        if kind in _MATMUL_TYPES:
            out_ch = max(layer.output_shape[-1], 1) if layer.output_shape else 1
            in_ch = max(io.in_channels, 1)
            gemm_fwd = (n_out // out_ch, out_ch)
            gemm_bwd = (n_in // in_ch, in_ch)

        def gemm_call(what: str, pas: Pass, nbytes: int, gemm: tuple[int, int]) -> None:
            """The forward GEMM or the input-gradient one: same FLOPs, split-K for Dense."""
            add(
                what,
                "matmul",
                pas,
                flops,
                nbytes,
                tensor=tensor,
                gemm=gemm,
                split_k=kind == "Dense",
            )

        gemm_call("forward", "forward", x_bytes + w_read + y_bytes, gemm_fwd)
        # NCHW: cuDNN transposes each call's activation operands to NHWC and its result back
        # (only on cards whose tensor cores run this precision: `tensor_only`)
        nchw = (
            tensor
            and p.tensor_key is not None
            and kind in CONV_TYPES
            and sw.memory_format == "channels_first"
        )

        def transposes(what: str, pas: Pass, operand_bytes: int) -> None:
            """The two layout transposes around one call (each reads and writes)."""
            if nchw:
                add(what, "elementwise", pas, 0, 2 * operand_bytes, 2, tensor_only=True)

        transposes("NCHW<->NHWC transposes", "forward", x_bytes + y_bytes)
        if layer.fused_activation != "none":
            add("activation", "elementwise", "forward", n_out, 2 * y_bytes)
        if layer.fused_activation != "none" and (back_in or trains):
            add("activation backward", "elementwise", "backward_input", n_out, 3 * y_bytes)
        if back_in:
            gemm_call("backward input", "backward_input", y_bytes + w_read + dx_bytes, gemm_bwd)
            transposes(
                "backward input NCHW<->NHWC transposes", "backward_input", y_bytes + dx_bytes
            )
        if trains:
            grads = max(layer.trainable_params, layer.matmul_params) * p.grad_bytes
            add(
                "backward weight",
                "matmul",
                "backward_weight",
                flops,
                y_bytes + x_bytes + grads,
                tensor=tensor,
            )
            transposes(
                "backward weight NCHW->NHWC transposes", "backward_weight", y_bytes + x_bytes
            )
        return ops
    if kind in _NORM_TYPES:
        add("statistics", "reduction", "forward", 2 * n_in, x_bytes)
        add("normalize", "elementwise", "forward", layer.flops * batch, x_bytes + y_bytes)
        if back_in or trains:
            add("backward statistics", "reduction", "backward_input", 2 * n_out, y_bytes + x_bytes)
            add(
                "backward",
                "elementwise",
                "backward_input",
                layer.flops * batch,
                y_bytes + x_bytes + dx_bytes,
            )
        return ops
    if kind == "Embedding":
        add("gather", "elementwise", "forward", 0, x_bytes + 2 * y_bytes)
        if trains:
            table = layer.trainable_params * p.grad_bytes
            add(
                "backward (index_add)",
                "elementwise",
                "backward_weight",
                n_out,
                x_bytes + y_bytes + table,
                kernels=2,
            )
        return ops
    # activations, pooling, dropout, padding, upsampling, merges: stream in, stream out
    cls: OpClass = "reduction" if (kind in _REDUCTIONS or "Pooling" in kind) else "elementwise"
    extra = sum(s.elements for s in layer.internal_saved) * batch  # masks, indices written
    add("forward", cls, "forward", layer.flops * batch, x_bytes + y_bytes + extra)
    if back_in and not layer.grad_alias:  # Add/Concatenate pass the gradient on as a view
        saved = x_bytes if layer.saves_input else (y_bytes if layer.saves_output else extra)
        add(
            "backward",
            "elementwise",
            "backward_input",
            layer.flops * batch,
            y_bytes + saved + dx_bytes,
        )
    return ops


def _recurrent_ops(
    layer: LayerStats, io: LayerIO, p: Precision, batch: int, network: str
) -> list[Op]:
    """cuDNN's RNN: one GEMM for every step's input projection, then a small GEMM per step.

    The recurrent GEMM re-reads the recurrent weights every step (they do not stay
    in registers for long sequences), and each step adds its gate elementwise kernel.
    """
    steps = max(io.in_elements // max(io.in_channels, 1), 1)
    act = p.act_bytes
    w_read = layer.matmul_params * (p.low_copy_bytes if p.amp else p.weight_bytes)
    flops = layer.flops * batch
    tensor = tensor_aligned(p, io.in_channels, layer.output_shape[-1])
    x_bytes = io.in_bytes * batch
    y_bytes = layer.output_elements * batch * act
    per_step = w_read + batch * layer.output_shape[-1] * act * 4  # weights and one step's gates
    idx = io.index if io.index >= 0 else layer.index
    label = io.label or f"{layer.type} (layers[{idx}])"
    ops = [
        Op(
            f"{label} forward",
            "matmul",
            "forward",
            flops,
            x_bytes + steps * per_step + y_bytes,
            2 * steps + 1,
            tensor,
            idx,
            network,
            label,
        )
    ]
    if io.training and (io.needs_input_grad or io.trains):
        saved = sum(s.elements for s in layer.internal_saved) * batch * act
        grads = layer.trainable_params * p.grad_bytes
        ops.append(
            Op(
                f"{label} backward",
                "matmul",
                "backward_input",
                2 * flops,
                y_bytes + saved + steps * per_step + grads + x_bytes,
                3 * steps + 1,
                tensor,
                idx,
                network,
                label,
            )
        )
    return ops
