"""Step time from a roofline per op: max(FLOPs / compute peak, bytes / bandwidth) + launches.

Why: FLOPs at a fixed fraction of the datasheet peak rank cards by their tensor
figure alone, so a 300 GB/s L4 came out ahead of a 936 GB/s RTX 3090. Real steps
are a mix of compute-bound matrix maths, memory-bound normalisations,
activations and optimizer updates, and kernels too small to amortise their
launch. Each op is therefore timed against the ceiling that limits it:

    time(op) = max(flops / (peak_of_its_class x eff), bytes / (bandwidth x eff))
               + kernels x LAUNCH_S

Ops are described neutrally (`Op`: class, pass, FLOPs, bytes, kernels) so the
fit engine only needs an adapter (`layer_ops`, `network_ops`) from its layer
stats; a new engine changes the adapter, not the timing. Pure: no NVML, no UI.

Compute peak per op class and precision (see `Ceilings`): matmul/conv ops run at
the catalog's tensor-core figure only in precisions the architecture's tensor
cores accelerate and, for 16-bit (8-bit) inputs, only when the channel counts
are multiples of 8 (16): cuBLAS/cuDNN pick tensor-core kernels only for aligned
shapes (NVIDIA, "Matrix Multiplication Background User's Guide", 2.2 Tensor Core
Requirements).
Otherwise, and for elementwise and reduction work, the CUDA-core FP32 rate. The
catalog's fp16/bf16 tensor figures are FP32-accumulate rates, which is what
GeForce runs at half speed, so that halving is already in the figure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from gputui.catalog.models import Architecture, Card
from gputui.fit.core.precision import Precision, has_tensor, policy
from gputui.fit.core.software import DEFAULT_SOFTWARE as DEFAULT_SOFTWARE  # re-exported
from gputui.fit.core.software import MemoryFormat as MemoryFormat
from gputui.fit.core.software import OptimizerImpl as OptimizerImpl
from gputui.fit.core.software import Software as Software
from gputui.fit.core.waves import GEMM_TILE as GEMM_TILE  # re-exported
from gputui.fit.core.waves import gemm_depth, gemm_waves, split_k_bytes
from gputui.fit.core.waves import wave_efficiency as wave_efficiency  # re-exported
from gputui.fit.graph.memory import autograd_flags, input_bytes
from gputui.fit.graph.network import Network, Ref, compose, frozen_copy
from gputui.fit.graph.spec import ModelSpec
from gputui.fit.graph.stats import LayerStats

OpClass = Literal["matmul", "elementwise", "reduction"]
Pass = Literal["forward", "backward_input", "backward_weight", "optimizer"]
Bound = Literal["compute", "memory", "launch"]
BOUNDS: tuple[Bound, ...] = ("compute", "memory", "launch")

# One efficiency factor per op class: the fraction of a ceiling (compute peak and
# memory bandwidth alike) that class of kernel reaches. Chosen from what such kernels
# are known to reach, before and not by fitting to the published points they are
# checked against (benchmarks/speed_vs_published.md); none is per card:
# - matmul/conv 0.7: big square cuBLAS FP16 GEMMs reach about 90 % of peak (e.g.
#   23.6 of 26 TFLOPS on an RTX 2060 in andylolu2/simpleGEMM's cuBLAS reference run);
#   layer-sized GEMMs and convolutions lose more to tile and wave quantisation (NVIDIA,
#   "Matrix Multiplication Background User's Guide", ch. 3). 0.7 is an assumed middle.
# - elementwise 0.8: streaming kernels (copy/scale/add) reach roughly 80-90 % of the
#   DRAM datasheet bandwidth; 0.8 is the assumed low end.
# - reduction 0.7: reductions (normalisation statistics, pooling, softmax) add a
#   second pass through shared memory, a little below streaming (assumed).
EFFICIENCY: dict[OpClass, float] = {"matmul": 0.7, "elementwise": 0.8, "reduction": 0.7}
# GPU-side cost of one kernel beyond its work: launch latency, ramp-up and tail
# (a few microseconds on every CUDA GPU; an assumed 5 us).
LAUNCH_S = 5e-6
# CPU-side cost of issuing one kernel from PyTorch eager: Python, the autograd and
# ATen dispatchers, the library's algorithm choice and cudaLaunchKernel, "~5-25 us of
# CPU-side work per op" by the layer-by-layer tally in "From PyTorch op to kernel
# launch" (jiahuanglin.xyz, gpu_kernel_serving lesson 18); 10 us assumed, the low
# middle of that range. The host runs ahead of the GPU, so this costs nothing while
# kernels take longer than it; a stream of tiny kernels (small models, batch 1) waits
# on the host instead, and `time_ops` counts that wait as launch-bound time.
HOST_S_PER_KERNEL = 10e-6
# Elements a dimension must be a multiple of for tensor-core kernels, by input width.
TENSOR_ALIGN = {2: 8, 1: 16, 4: 1}
# PyTorch's multi_tensor_apply (foreach optimizers): at most 48 tensors of a
# 3-list op and 320 blocks of 65,536 elements per launch.
FOREACH_TENSORS_PER_LAUNCH = 48
FOREACH_ELEMENTS_PER_LAUNCH = 320 * 65536
# Tensor reads+writes per parameter of one PyTorch foreach optimizer step, counted
# op by op (each foreach op reads its operands and writes its result once):
# sgd add(w,g); momentum mul/add(m,g) + add(w,m); rmsprop mul/addcmul(v,g,g) +
# sqrt/add(eps) + addcdiv(w,g,v); adam lerp(m,g) + mul/addcmul(v,g,g) + sqrt +
# div + add(eps) + addcdiv(w,m,denom); adamw adds the decoupled mul(w).
OPTIMIZER_TRAFFIC: dict[str, tuple[int, int]] = {  # (tensor accesses, foreach ops)
    "sgd": (3, 1),
    "momentum": (6, 2),
    "rmsprop": (12, 4),
    "adam": (18, 7),
    "adamw": (20, 8),
}
# The same optimizers as kernels of other implementations (see `Software.optimizer`):
# - "fused" (apex FusedAdam/FusedSGD, torch's fused=True): one multi-tensor kernel reads
#   the weight, gradient and state once and writes weight and state once (sgd: w, g ->
#   w; momentum: w, g, m -> w, m; adam/adamw: w, g, m, v -> w, m, v; rmsprop w, g, v).
# - "loop" (a Python loop over the tensors: PyTorch before 2.0 and `foreach=False`): the
#   foreach ops' traffic, but every op launches once per tensor, one layer after the
#   other (so the host's issue rate matters).
# - "bertadam" (Adam as NVIDIA's BERT scripts write it, DLE LanguageModeling/BERT/
#   optimization.py BertAdam.step): a loop over the tensors that first clips each
#   tensor's gradient on its own (clip_grad_norm_: norm, stack, norm, clamp, scale: 6
#   kernels, 3 accesses), then mul_/add_ m, mul_/addcmul_ v, sqrt, + eps, divide,
#   weight decay (x, +=), x lr, negate, add_ to the weight: 12 kernels, 30 accesses.
FUSED_TRAFFIC: dict[str, int] = {"sgd": 3, "momentum": 5, "rmsprop": 5, "adam": 7, "adamw": 7}
BERTADAM_TRAFFIC = (33, 18)  # (tensor accesses per element, kernels per tensor)


@dataclass(frozen=True, slots=True)
class Op:
    """One kernel (or a few of one kind) with the work it does for the whole batch."""

    name: str
    op_class: OpClass
    pass_: Pass
    flops: float
    bytes: float
    kernels: int = 1
    tensor_cores: bool = False  # a matmul/conv whose shapes and precision allow tensor cores
    layer: int | None = None  # the model layer it belongs to (None: optimizer, casts)
    network: str = ""  # "generator"/"discriminator" in a GAN
    label: str = ""  # the layer as reports name it
    tensor_path_only: bool = False  # runs only where the precision has a tensor path (NCHW)
    gemm: tuple[int, int] = (0, 0)  # (rows, columns) of a GEMM's output: wave quantisation
    split_k: bool = False  # a cuBLAS GEMM, whose K cuBLAS splits across idle SMs (fit/core/waves.py)


@dataclass(frozen=True, slots=True)
class Ceilings:
    """What one card offers a precision: peaks in FLOP/s, bandwidth in bytes/s."""

    tensor_flops: float | None  # matmul/conv on tensor cores (None: no tensor path)
    cuda_core_flops: float  # FP32 CUDA-core rate: everything else
    bandwidth: float
    basis: str  # which catalog figures, e.g. "bf16 tensor 165 TFLOPS, 1008 GB/s"
    derived: bool = False  # a figure used is derived by an architecture rule
    sms: int = 0  # streaming multiprocessors (0: unknown, no wave quantisation)


@dataclass(frozen=True, slots=True)
class OpTime:
    op: Op
    compute_s: float
    memory_s: float
    launch_s: float

    @property
    def seconds(self) -> float:
        return max(self.compute_s, self.memory_s) + self.launch_s

    @property
    def bound(self) -> Bound:
        work = max(self.compute_s, self.memory_s)
        if self.launch_s >= work:
            return "launch"
        return "compute" if self.compute_s >= self.memory_s else "memory"


@dataclass(frozen=True, slots=True)
class LayerTime:
    """One layer's ops over every pass, and the bound that dominates its time."""

    layer: int
    label: str
    network: str
    seconds: float
    bound: Bound
    by_bound: dict[Bound, float]


@dataclass(frozen=True, slots=True)
class Profile:
    """A whole step on one card: time, throughput and where the time goes.

    Only the totals are computed up front (a ranking times every card); per-op and
    per-layer times are worked out when a report asks for them.
    """

    step_time_s: float
    samples_per_s: float
    batch: int
    ceilings: Ceilings
    ops: tuple[Op, ...]
    by_bound: dict[Bound, float]  # seconds of the step each bound takes
    host_wait_s: float = 0.0  # of by_bound["launch"]: the GPU idle, waiting for the host

    def op_times(self) -> tuple[OpTime, ...]:
        return tuple(op_time(op, self.ceilings) for op in self.ops)

    @property
    def layers(self) -> tuple[LayerTime, ...]:
        return _layer_times(self.op_times())

    def seconds_by_bound(self) -> dict[Bound, float]:
        return dict(self.by_bound)

    @property
    def shares(self) -> dict[Bound, float]:
        """Fraction of the step each bound takes (an op's whole time goes to its bound)."""
        total = self.step_time_s
        return {b: (self.by_bound[b] / total if total > 0 else 0.0) for b in BOUNDS}

    @property
    def bound(self) -> Bound:
        return max(BOUNDS, key=self.by_bound.__getitem__)


# ------------------------------------------------------------------ ceilings


def missing_figure(card: Card) -> str | None:
    """Which catalog figure keeps the roofline from timing `card`, if one does."""
    if card.fp32_tflops is None:
        return "no FP32 (CUDA-core) figure"
    if card.memory_bandwidth_gbs is None:
        return "no memory bandwidth figure"
    return None


def ceilings(
    card: Card,
    architecture: Architecture | None,
    precision: str,
    *,
    accumulate16: bool = False,
) -> Ceilings | None:
    """The card's peaks for `precision`; None when its FP32 rate or bandwidth is unknown.

    A precision the tensor cores run whose figure the catalog lacks also gives None
    (a missing figure must never pass for a slow card; the ranking places it by its
    FP32 floor). `accumulate16` asks for the FP16-accumulate tensor rate where the
    catalog has one (llama.cpp's cuBLAS path computes in FP16).
    """
    from gputui.fit.core.throughput import rate

    if card.fp32_tflops is None or card.memory_bandwidth_gbs is None:
        return None
    p = policy(precision)
    found = rate(card, architecture, precision)
    tensor: float | None = None
    derived = card.is_derived("fp32_tflops") or card.is_derived("memory_bandwidth_gbs")
    key = p.tensor_key
    basis = f"fp32 {card.fp32_tflops:g} TFLOPS"
    if key is not None and has_tensor(architecture, key, card):
        if found.tflops is None:
            return None
        tensor = found.tflops
        if accumulate16 and key == "fp16" and card.fp16_acc16_tensor_tflops is not None:
            tensor = card.fp16_acc16_tensor_tflops
            derived = derived or card.is_derived("fp16_acc16_tensor_tflops")
            basis = f"fp16 tensor (fp16 accumulate) {tensor:g} TFLOPS, " + basis
        else:
            derived = derived or found.derived
            basis = f"{found.basis} {tensor:g} TFLOPS, " + basis
    elif key is not None and found.tflops is not None and found.tflops > card.fp32_tflops:
        # fp16 on chips whose CUDA cores run it at twice FP32 (P100, GTX 16): matrix maths only
        tensor = found.tflops
        basis = f"{found.basis} {tensor:g} TFLOPS, " + basis
        derived = derived or found.derived
    return Ceilings(
        tensor * 1e12 if tensor is not None else None,
        card.fp32_tflops * 1e12,
        card.memory_bandwidth_gbs * 1e9,
        f"{basis}, {card.memory_bandwidth_gbs:g} GB/s",
        derived,
        card.sm_count or 0,
    )


def op_time(op: Op, c: Ceilings) -> OpTime:
    if op.tensor_path_only and c.tensor_flops is None:
        return OpTime(op, 0.0, 0.0, 0.0)
    eff = EFFICIENCY[op.op_class]
    tensor = op.tensor_cores and op.op_class == "matmul"
    peak = c.tensor_flops if tensor else None
    if peak is None:
        peak = c.cuda_core_flops
    flops, memory = op.flops, op.bytes / (c.bandwidth * eff)
    if op.gemm[0] and c.sms:  # partial sums of a split K stream like elementwise work
        share, splits = gemm_waves(*op.gemm, c.sms, gemm_depth(flops, *op.gemm, op.split_k))
        flops /= share
        memory += split_k_bytes(*op.gemm, splits) / (c.bandwidth * EFFICIENCY["elementwise"])
    return OpTime(op, flops / (peak * eff), memory, op.kernels * LAUNCH_S)


# An op as the card-independent numbers its time needs: (FLOPs / efficiency, bytes /
# efficiency, launch seconds, runs on tensor cores, runs only with a tensor path, GEMM
# output rows, columns, depth). Worked out once per op list, so timing a card is a
# division and a max per op (and a wave count for GEMMs).
Compiled = tuple[tuple[float, float, float, bool, bool, int, int, int], ...]


def compile_ops(ops: Iterable[Op]) -> Compiled:
    out = []
    for op in ops:
        eff = EFFICIENCY[op.op_class]
        out.append(
            (
                op.flops / eff,
                op.bytes / eff,
                op.kernels * LAUNCH_S,
                op.tensor_cores and op.op_class == "matmul",
                op.tensor_path_only,
                op.gemm[0],
                op.gemm[1],
                gemm_depth(op.flops, *op.gemm, op.split_k),
            )
        )
    return tuple(out)


def time_ops(
    ops: Sequence[Op], c: Ceilings, batch: int, compiled: Compiled | None = None
) -> Profile:
    """Sum `op_time` over the ops (inlined: a ranking does this for every card), plus the
    time the GPU waits for the host to issue the next kernel (HOST_S_PER_KERNEL): op i
    starts when the GPU has finished op i-1 and the host has issued op i."""
    by: dict[Bound, float] = {"compute": 0.0, "memory": 0.0, "launch": 0.0}
    t_compute = t_memory = t_launch = 0.0
    host = gpu = waited = 0.0
    host_per_launch_s = HOST_S_PER_KERNEL / LAUNCH_S
    bw = c.bandwidth
    cuda = c.cuda_core_flops
    tensor = c.tensor_flops if c.tensor_flops is not None else cuda
    no_tensor_path = c.tensor_flops is None
    sms = c.sms
    partial_eff = EFFICIENCY["elementwise"]
    for flops, nbytes, launch, on_tensor, tensor_only, rows, cols, depth in (
        compiled if compiled is not None else compile_ops(ops)
    ):
        if tensor_only and no_tensor_path:
            continue
        compute = flops / (tensor if on_tensor else cuda)
        if rows and sms:
            share, splits = gemm_waves(rows, cols, sms, depth)
            compute /= share
            if splits > 1:
                nbytes += split_k_bytes(rows, cols, splits) / partial_eff
        memory = nbytes / bw
        host += launch * host_per_launch_s
        if host > gpu:  # the GPU idles until the host has issued this op
            t_launch += host - gpu
            waited += host - gpu
            gpu = host
        gpu += (compute if compute >= memory else memory) + launch
        if compute >= memory:
            if launch >= compute:
                t_launch += compute + launch
            else:
                t_compute += compute + launch
        elif launch >= memory:
            t_launch += memory + launch
        else:
            t_memory += memory + launch
    by["compute"], by["memory"], by["launch"] = t_compute, t_memory, t_launch
    total = t_compute + t_memory + t_launch
    return Profile(
        total, batch / total if total > 0 else math.inf, batch, c, tuple(ops), by, waited
    )


def _layer_times(times: Iterable[OpTime]) -> tuple[LayerTime, ...]:
    acc: dict[tuple[str, int], dict[Bound, float]] = {}
    names: dict[tuple[str, int], str] = {}
    for t in times:
        if t.op.layer is None:
            continue
        key = (t.op.network, t.op.layer)
        names.setdefault(key, t.op.label)
        by = acc.setdefault(key, {b: 0.0 for b in BOUNDS})
        by[t.bound] += t.seconds
    out = []
    for key, by in acc.items():
        out.append(
            LayerTime(
                key[1], names[key], key[0], sum(by.values()), max(BOUNDS, key=by.__getitem__), by
            )
        )
    return tuple(out)


# ------------------------------------------------------------------ adapter: layer stats -> ops


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
_CONV_TYPES = _MATMUL_TYPES - {"Dense"}
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


def _aligned(p: Precision, *dims: int) -> bool:
    width = p.low_copy_bytes if p.amp else p.act_bytes
    align = TENSOR_ALIGN.get(width, 1)
    return all(d % align == 0 for d in dims)


@dataclass(frozen=True, slots=True)
class _Kernels:
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
    add = _Kernels(ops, label, idx, network).add
    kind = layer.type
    if kind in _RNN_TYPES:
        return _recurrent_ops(layer, io, p, batch, network)
    if kind in _MATMUL_TYPES or kind == "DepthwiseConv2D" or layer.matmul_params:
        # depthwise convolutions have no reduction over channels: CUDA cores
        tensor = kind != "DepthwiseConv2D" and _aligned(p, io.in_channels, layer.output_shape[-1])
        flops = layer.flops * batch
        # as GEMMs (implicit for convolutions): one output row per position of the batch
        gemm_fwd = gemm_bwd = (0, 0)
        if kind in _MATMUL_TYPES:
            out_ch = max(layer.output_shape[-1], 1) if layer.output_shape else 1
            in_ch = max(io.in_channels, 1)
            gemm_fwd = (n_out // out_ch, out_ch)
            gemm_bwd = (n_in // in_ch, in_ch)
        add(
            "forward",
            "matmul",
            "forward",
            flops,
            x_bytes + w_read + y_bytes,
            tensor=tensor,
            gemm=gemm_fwd,
            split_k=kind == "Dense",
        )
        # NCHW: cuDNN transposes each call's activation operands to NHWC and its result back
        # (only on cards whose tensor cores run this precision: `tensor_only`)
        nchw = (
            tensor
            and p.tensor_key is not None
            and kind in _CONV_TYPES
            and sw.memory_format == "channels_first"
        )
        if nchw:
            add(
                "NCHW<->NHWC transposes",
                "elementwise",
                "forward",
                0,
                2 * (x_bytes + y_bytes),
                2,
                tensor_only=True,
            )
        if layer.fused_activation != "none":
            add("activation", "elementwise", "forward", n_out, 2 * y_bytes)
        if layer.fused_activation != "none" and (back_in or trains):
            add("activation backward", "elementwise", "backward_input", n_out, 3 * y_bytes)
        if back_in:
            add(
                "backward input",
                "matmul",
                "backward_input",
                flops,
                y_bytes + w_read + dx_bytes,
                tensor=tensor,
                gemm=gemm_bwd,
                split_k=kind == "Dense",
            )
            if nchw:
                add(
                    "backward input NCHW<->NHWC transposes",
                    "elementwise",
                    "backward_input",
                    0,
                    2 * (y_bytes + dx_bytes),
                    2,
                    tensor_only=True,
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
            if nchw:
                add(
                    "backward weight NCHW->NHWC transposes",
                    "elementwise",
                    "backward_weight",
                    0,
                    2 * (y_bytes + x_bytes),
                    2,
                    tensor_only=True,
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
    tensor = _aligned(p, io.in_channels, layer.output_shape[-1])
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


def attention_ops(
    layer: LayerStats,
    raw: Mapping[str, Any],
    shapes: Sequence[Sequence[int]],
    io: LayerIO,
    p: Precision,
    batch: int,
    network: str = "",
    sw: Software = DEFAULT_SOFTWARE,
) -> list[Op]:
    """Multi-head attention as the kernels it runs: projections, the two batched
    matmuls over the (heads x queries x keys) maps, softmax and dropout on the maps.

    Eager attention writes the maps to DRAM and reads them back in every step
    (scores, softmax, dropout, AV, and their backward); a fused kernel (SDPA/flash)
    keeps them on chip and moves only q, k, v and the output. Which one runs is what
    the layer's stats say it keeps for backward (the maps are kept only when eager).
    """
    heads = int(raw.get("num_heads", 1))
    kd = int(raw.get("key_dim", 1))
    vd = int(raw.get("value_dim", kd) or kd)
    rate = float(raw.get("dropout", 0.0) or 0.0)
    q_shape = tuple(shapes[0])
    v_shape = tuple(shapes[1]) if len(shapes) > 1 else q_shape
    k_shape = tuple(shapes[2]) if len(shapes) > 2 else v_shape
    t, s_len = q_shape[0], v_shape[0]
    out_dim = layer.output_shape[-1]
    maps = heads * t * s_len * batch
    eager = any(x.elements == heads * t * s_len for x in layer.internal_saved)
    act = p.act_bytes
    wb = p.low_copy_bytes if p.amp else p.weight_bytes
    idx = io.index if io.index >= 0 else layer.index
    label = io.label or f"{layer.type} (layers[{idx}])"
    training = io.training and (io.needs_input_grad or io.trains)
    ops: list[Op] = []
    kernels = _Kernels(ops, label, idx, network)

    def add(
        what: str,
        cls: OpClass,
        pas: Pass,
        flops: float,
        nbytes: float,
        tensor: bool,
        gemm: tuple[int, int] = (0, 0),
    ) -> None:
        kernels.add(what, cls, pas, flops, nbytes, tensor=tensor, gemm=gemm)

    projections = (
        ("query", q_shape[-1], heads * kd),
        ("key", k_shape[-1], heads * kd),
        ("value", v_shape[-1], heads * vd),
    )
    rows = {"query": t, "key": s_len, "value": s_len}
    for name, din, dout in (*projections, ("output", heads * vd, out_dim)):
        n = (t if name == "output" else rows[name]) * batch
        flops = 2 * n * din * dout
        tensor = _aligned(p, din, dout)
        moved = n * din * act + din * dout * wb + n * dout * act
        add(f"{name} projection", "matmul", "forward", flops, moved, tensor, (n, dout))
        if training:
            add(
                f"{name} projection backward",
                "matmul",
                "backward_input",
                2 * flops,
                2 * moved + din * dout * p.grad_bytes,
                tensor,
            )
    qkv = batch * (t * heads * kd + s_len * heads * kd + s_len * heads * vd)
    o = batch * t * heads * vd
    core = 2 * maps * (kd + vd)
    tensor = _aligned(p, kd, vd)
    if not eager:
        add("fused attention", "matmul", "forward", core, (qkv + o) * act, tensor)
        if training:  # FlashAttention's backward recomputes the maps: 2.5x the forward work
            add(
                "fused attention backward",
                "matmul",
                "backward_input",
                2.5 * core,
                2 * (qkv + o) * act,
                tensor,
            )
        return ops
    m_bytes = maps * act
    add("scores (q k^T)", "matmul", "forward", 2 * maps * kd, qkv * act * 2 / 3 + m_bytes, tensor)
    if sw.score_scale_mask:
        add("scores / sqrt(d)", "elementwise", "forward", maps, 2 * m_bytes, False)
        add("scores + mask", "elementwise", "forward", maps, 2 * m_bytes, False)
    add("softmax", "reduction", "forward", 5 * maps, 2 * m_bytes, False)
    if rate > 0:
        add("dropout", "elementwise", "forward", maps, 2 * m_bytes + maps, False)
    add("probs @ v", "matmul", "forward", 2 * maps * vd, m_bytes + qkv * act / 3 + o * act, tensor)
    if training:
        add(
            "probs @ v backward",
            "matmul",
            "backward_input",
            4 * maps * vd,
            2 * m_bytes + 2 * (qkv * act / 3 + o * act),
            tensor,
        )
        if rate > 0:
            add(
                "dropout backward", "elementwise", "backward_input", maps, 2 * m_bytes + maps, False
            )
        add("softmax backward", "elementwise", "backward_input", 3 * maps, 3 * m_bytes, False)
        if sw.score_scale_mask:  # the mask's add hands its gradient on unchanged
            add("scale backward", "elementwise", "backward_input", maps, 2 * m_bytes, False)
        add(
            "scores backward",
            "matmul",
            "backward_input",
            4 * maps * kd,
            m_bytes + 2 * qkv * act * 2 / 3,
            tensor,
        )
    return ops


def network_ops(
    net: Network,
    p: Precision,
    batch: int,
    *,
    training: bool,
    network: str = "",
    sw: Software = DEFAULT_SOFTWARE,
) -> list[Op]:
    """Every node's kernels through a network graph, in the order they run forward."""
    ops: list[Op] = []
    _, _, in_req = autograd_flags(net)
    width: dict[Ref, int] = {
        (-1 - k, 0): input_bytes(i.integer, p) for k, i in enumerate(net.inputs)
    }
    for i, node in enumerate(net.nodes):
        st = node.stats
        shapes = node.input_shapes or ((),)
        elements = [math.prod(s) if s else 1 for s in shapes]
        needs = any(in_req[i])
        io = LayerIO(
            sum(elements),
            shapes[0][-1] if shapes[0] else 1,
            sum(e * width.get(r, p.act_bytes) for e, r in zip(elements, node.inputs, strict=False)),
            needs,
            node.trains,
            training,
            node.label,
            i,
        )
        if st.type == "MultiHeadAttention":
            ops += attention_ops(st, node.raw, shapes, io, p, batch, network, sw)
        else:
            ops += layer_ops(st, io, p, batch, network, sw)
        out_w = 4 if (p.amp and st.autocast_fp32) else p.act_bytes
        for k in range(1 + len(st.extra_outputs)):
            width[(i, k)] = width.get(node.inputs[0], out_w) if st.output_is_view else out_w
    return ops


def optimizer_ops(
    nets: Sequence[Network],
    optimizer: str,
    p: Precision,
    network: str = "",
    impl: OptimizerImpl = "foreach",
) -> list[Op]:
    """The optimizer step (`impl`: PyTorch foreach, a fused kernel or a per-tensor loop)
    plus AMP's weight casts and grad unscale."""
    params = sum(n.trainable_params for n in nets)
    tensors = sum(
        len(layer.param_tensors) for n in nets for layer in n.layers if layer.trainable_params
    )
    if params == 0:
        return []
    accesses, foreach = OPTIMIZER_TRAFFIC[optimizer]
    launches = max(
        math.ceil(tensors / FOREACH_TENSORS_PER_LAUNCH),
        math.ceil(params / FOREACH_ELEMENTS_PER_LAUNCH),
        1,
    )
    width = max(p.weight_bytes, p.state_bytes, p.grad_bytes)
    ops: list[Op] = []
    if impl == "bertadam":  # BertAdam is an Adam; any other optimizer: its plain loop
        if optimizer in {"adam", "adamw"}:
            accesses, foreach = BERTADAM_TRAFFIC
        impl = "loop"
    if impl == "loop":
        for n in nets:
            for layer in n.layers:
                if not layer.trainable_params:
                    continue
                count = layer.trainable_params
                ops.append(
                    Op(
                        f"{optimizer} step (per-tensor loop, {layer.type})",
                        "elementwise",
                        "optimizer",
                        accesses * count,
                        accesses * count * width,
                        foreach * max(len(layer.param_tensors), 1),
                        network=network,
                    )
                )
    else:
        if impl == "fused":
            accesses, foreach = FUSED_TRAFFIC[optimizer], 1
        ops.append(
            Op(
                f"{optimizer} step" + (" (fused)" if impl == "fused" else ""),
                "elementwise",
                "optimizer",
                accesses * params,
                accesses * params * width,
                foreach * launches,
                network=network,
            )
        )
    if p.amp:
        copies = sum(layer.matmul_params for n in nets for layer in n.layers)
        layers = sum(1 for n in nets for layer in n.layers if layer.matmul_params)
        ops.append(
            Op(
                "autocast weight casts",
                "elementwise",
                "forward",
                copies,
                copies * (p.weight_bytes + p.low_copy_bytes),
                layers,
                network=network,
            )
        )
        if p.name == "amp_fp16":  # GradScaler: unscale and inf check of every gradient
            ops.append(
                Op(
                    "grad unscale",
                    "elementwise",
                    "optimizer",
                    params,
                    2 * params * p.grad_bytes,
                    launches,
                    network=network,
                )
            )
    return ops


# model_ops depends on the model, precision, batch and mode, not on the card: a
# ranking reuses one op list for every card. Keyed by the model's identity (models
# hold dicts, so they do not hash); the entry keeps the model alive, so an id in the
# cache is never a different, newer model.
_OPS_CACHE: dict[
    tuple[int, str, int, str, Software], tuple[ModelSpec, tuple[Op, ...], Compiled]
] = {}
_OPS_CACHE_SIZE = 64


def _cached_ops(
    model: ModelSpec,
    precision: str,
    batch: int,
    mode: str | None,
    sw: Software | None = None,
) -> tuple[tuple[Op, ...], Compiled]:
    sw = model.software if sw is None else sw
    key = (id(model), precision, batch, mode or model.mode, sw)
    hit = _OPS_CACHE.get(key)
    if hit is not None and hit[0] is model:
        return hit[1], hit[2]
    ops = tuple(_model_ops(model, precision, batch, mode, sw))
    compiled = compile_ops(ops)
    if len(_OPS_CACHE) >= _OPS_CACHE_SIZE:
        _OPS_CACHE.pop(next(iter(_OPS_CACHE)), None)
    _OPS_CACHE[key] = (model, ops, compiled)
    return ops, compiled


def model_ops(
    model: ModelSpec,
    precision: str,
    batch: int,
    mode: str | None = None,
    sw: Software | None = None,
) -> list[Op]:
    """One step of `model` as ops: a training step with its optimizer, or a forward pass.

    `sw`: how the framework runs it; None: what the model says (`ModelSpec.software`)."""
    return list(_cached_ops(model, precision, batch, mode, sw)[0])


def _model_ops(
    model: ModelSpec,
    precision: str,
    batch: int,
    mode: str | None,
    sw: Software = DEFAULT_SOFTWARE,
) -> list[Op]:
    p = policy(precision)
    mode = mode or model.mode
    training = mode == "train" and p.training
    if model.network is not None:
        ops = network_ops(model.network, p, batch, training=training, sw=sw)
        if training:
            ops += optimizer_ops((model.network,), model.optimizer, p, impl=sw.optimizer)
        return ops
    gen, disc = model.generator, model.discriminator
    assert gen is not None and disc is not None
    if not training:
        return network_ops(gen, p, batch, training=False, network="generator", sw=sw)
    # memory.py's step: fakes, D on a real and a generated batch, then G through frozen D
    ops = network_ops(gen, p, batch, training=False, network="generator", sw=sw)
    for _ in range(2):
        ops += network_ops(disc, p, batch, training=True, network="discriminator", sw=sw)
    ops += optimizer_ops((disc,), model.optimizer, p, "discriminator", sw.optimizer)
    combined = compose(gen, frozen_copy(disc), prefix="discriminator/")
    ngen = len(gen.nodes)
    for op in network_ops(combined, p, batch, training=True, sw=sw):
        if op.layer is not None and op.layer >= ngen:  # D's layers, frozen: input grads only
            op = replace(op, layer=op.layer - ngen, network="discriminator")
        else:
            op = replace(op, network="generator")
        ops.append(op)
    ops += optimizer_ops((gen,), model.optimizer, p, "generator", sw.optimizer)
    return ops


def has_convolutions(model: ModelSpec) -> bool:
    """Whether `model` runs convolutions on tensor cores, the ops `Software.memory_format`
    changes (depthwise ones run on the CUDA cores in either layout)."""
    return any(layer.type in _CONV_TYPES for n in model.networks for layer in n.layers)


def profile(
    model: ModelSpec,
    card: Card,
    architecture: Architecture | None,
    precision: str,
    batch: int,
    mode: str | None = None,
    sw: Software | None = None,
) -> Profile | None:
    """The roofline step time of `model` on `card`; None when a figure it needs is unknown.

    `sw`: the framework's layout and optimizer implementation (`Software`); None: the
    model's own (`ModelSpec.software`, from the models file or the command line)."""
    c = ceilings(card, architecture, precision)
    if c is None:
        return None
    ops, compiled = _cached_ops(model, precision, batch, mode, sw)
    prof = time_ops(ops, c, batch, compiled)
    if precision == "tf32" and c.tensor_flops is not None:
        # TF32 mode lets cuDNN and cuBLAS run FP32 CUDA-core kernels where they are faster
        # (it allows TF32, it does not force it): on cards whose TF32 tensor rate is no
        # more than their FP32 rate (GeForce Ampere and Ada) the tensor path's NCHW
        # transposes make it the slower one. The whole step on either path; a per-call
        # choice could be faster still.
        fp32 = ceilings(card, architecture, "fp32")
        if fp32 is not None:
            ops32, compiled32 = _cached_ops(model, "fp32", batch, mode, sw)
            alt = time_ops(ops32, fp32, batch, compiled32)
            if alt.step_time_s < prof.step_time_s:
                return alt
    return prof


# ------------------------------------------------------------------ LLMs

# Wave quantisation and split-K: fit/core/waves.py (`wave_efficiency`, re-exported). Applied
# where the GEMM shapes are known, on top of the matmul efficiency: LLM prefill
# (`gemm_shapes`), and in layer models the forward and input-gradient GEMMs of dense and
# convolution layers and attention's projections (`Op.gemm`; convolutions as implicit
# GEMMs, one output row per batch position). Weight-gradient GEMMs are left out: their
# output is the small weight matrix and their reduction runs over the whole batch, which
# cuBLAS/cuDNN split across SMs (split-K) instead of leaving them idle.


# llama.cpp-style decoder graph: per layer two norms and their scales, q/k/v/o and
# three FFN matmuls, rope on q and k, KV-cache copies, attention (QK, softmax, AV),
# the SwiGLU product and two residual adds: about 20 kernels.
LLM_KERNELS_PER_LAYER = 20


@dataclass(frozen=True, slots=True)
class LLMSpeed:
    """Rough tokens/s of a decoder LLM on one card (labelled rough wherever shown)."""

    prefill_tokens_per_s: float  # prompt processing, all sequences of the batch together
    decode_tokens_per_s: float  # generated tokens/s summed over the batch
    decode_tokens_per_s_per_sequence: float
    decode_bound: Bound  # at this batch
    decode_compute_bound_batch: int | None  # smallest batch where decode turns compute-bound
    prefill_bound: Bound
    basis: str


def llm_speed(
    card: Card,
    architecture: Architecture | None,
    *,
    params: int,
    weight_bytes: int,
    n_layers: int,
    kv_bytes_per_token: int,
    attention_flops_per_token_pair: int,
    prompt_tokens: int = 512,
    context_tokens: int = 512,
    batch: int = 1,
    compute_precision: str = "fp16",
    dequant_bytes_per_param: float = 0.0,
    accumulate16: bool = False,
    gemm_shapes: Sequence[tuple[int, int, int]] = (),
) -> LLMSpeed | None:
    """Prefill and decode tokens/s of a decoder-only transformer; None without the figures.

    - `params`: parameters multiplied per token (the active ones for MoE), `weight_bytes`:
      bytes those weights occupy as stored (quantized: about params x bits / 8).
    - `kv_bytes_per_token`: K and V of one token over all layers (2 x layers x kv_heads x
      head_dim x bytes); `attention_flops_per_token_pair`: QK^T and AV FLOPs of one query
      against one cached token over all layers (4 x layers x heads x head_dim).
    - prefill: 2 x params x tokens + causal attention (half the token pairs), compute-bound
      on the tensor cores of `compute_precision`; weights read once per prompt, plus
      `dequant_bytes_per_param` written and re-read when quantized weights are expanded
      to 16 bit for the GEMM (llama.cpp's cuBLAS path: 4 bytes; 0 for MMQ or fp16 models).
    - decode: one step reads every weight once (shared by the batch) and each sequence's
      KV cache of `context_tokens`; FLOPs grow with the batch, bytes barely, so decode
      is bandwidth-bound until `decode_compute_bound_batch`.
    - `gemm_shapes`: (out_features, in_features, copies over all layers) of the weight
      matrices; with the card's SM count, prefill's GEMMs (one row per prompt token)
      are slowed by their wave quantisation (`wave_efficiency`).
    """
    c = ceilings(card, architecture, compute_precision, accumulate16=accumulate16)
    if c is None:
        return None
    kernels = n_layers * LLM_KERNELS_PER_LAYER + 3
    pp_tokens = prompt_tokens * batch
    pp_flops = 2 * params * pp_tokens + attention_flops_per_token_pair * batch * (
        prompt_tokens * (prompt_tokens + 1) / 2
    )
    pp_bytes = weight_bytes + params * dequant_bytes_per_param + kv_bytes_per_token * pp_tokens
    # FLOPs as the card sees them: each GEMM's divided by the share of SMs its waves use
    sms = card.sm_count or 0
    for out_f, in_f, copies in gemm_shapes if sms else ():
        flops = 2 * out_f * in_f * copies * pp_tokens
        pp_flops += flops / wave_efficiency(out_f, pp_tokens, sms) - flops
    pp = op_time(Op("prefill", "matmul", "forward", pp_flops, pp_bytes, kernels, True), c)

    def step(b: int) -> OpTime:
        flops = b * (2 * params + attention_flops_per_token_pair * context_tokens)
        nbytes = weight_bytes + b * kv_bytes_per_token * context_tokens
        return op_time(Op("decode step", "matmul", "forward", flops, nbytes, kernels, True), c)

    tg = step(batch)
    turn = _compute_bound_batch(step)
    return LLMSpeed(
        pp_tokens / pp.seconds,
        batch / tg.seconds,
        1 / tg.seconds,
        tg.bound,
        turn,
        pp.bound,
        c.basis,
    )


def _compute_bound_batch(step: Callable[[int], OpTime], limit: int = 1 << 16) -> int | None:
    """Smallest batch whose decode step is compute-bound (bisection: compute grows faster)."""

    def compute_bound(b: int) -> bool:
        t = step(b)
        return bool(t.compute_s >= t.memory_s)

    if not compute_bound(limit):
        return None
    lo, hi = 1, limit
    if compute_bound(lo):
        return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if compute_bound(mid):
            hi = mid
        else:
            lo = mid
    return hi


@dataclass(frozen=True, slots=True)
class LLMTrainSpeed:
    """Rough training tokens/s of a transformer on one card (labelled rough wherever shown)."""

    tokens_per_s: float
    bound: Bound
    basis: str


def llm_train_speed(
    card: Card,
    architecture: Architecture | None,
    *,
    params: int,
    trainable_params: int,
    weight_bytes: int,
    n_layers: int,
    attention_flops_per_token_pair: int,
    seq_len: int,
    batch: int,
    passes: int,
    compute_precision: str = "bf16",
    causal: bool = True,
    optimizer: str = "adamw",
    grad_accum: int = 1,
    optimizer_impl: OptimizerImpl = "foreach",
    trainable_tensors: int = 0,
) -> LLMTrainSpeed | None:
    """Training tokens/s of a transformer: the matmuls of `passes` forward-sized passes plus
    the optimizer step; None without the card's figures.

    `passes` counts forward-sized passes: 3 for a full step (forward, then input and
    weight gradients at twice the forward FLOPs), one more with gradient checkpointing
    (the forward is recomputed), one fewer when the base weights are frozen (LoRA:
    no weight gradients for them). Each pass reads every weight once; the optimizer
    step streams `trainable_params` (fp32 master weights and state) once per `grad_accum`
    micro-batches through the kernels of `optimizer_impl`, as `optimizer_ops` counts them:
    PyTorch's foreach ops (OPTIMIZER_TRAFFIC), one fused kernel (FUSED_TRAFFIC), or the
    foreach ops once per tensor of the `trainable_tensors` (a loop).
    """
    c = ceilings(card, architecture, compute_precision)
    if c is None:
        return None
    tokens = seq_len * batch
    pairs = seq_len * (seq_len + 1) / 2 if causal else seq_len * seq_len
    fwd_flops = 2 * params * tokens + attention_flops_per_token_pair * batch * pairs
    main = Op(
        "train step",
        "matmul",
        "forward",
        passes * fwd_flops,
        passes * weight_bytes,
        passes * (n_layers * LLM_KERNELS_PER_LAYER + 3),
        True,
    )
    accesses, foreach = OPTIMIZER_TRAFFIC.get(optimizer, OPTIMIZER_TRAFFIC["adamw"])
    launches = max(
        1,
        math.ceil(trainable_params / FOREACH_ELEMENTS_PER_LAUNCH),
        math.ceil(trainable_tensors / FOREACH_TENSORS_PER_LAUNCH),
    )
    kernels = launches * foreach
    if optimizer_impl == "fused":
        accesses, kernels = FUSED_TRAFFIC.get(optimizer, FUSED_TRAFFIC["adamw"]), launches
    elif optimizer_impl in ("loop", "bertadam"):
        kernels = foreach * max(trainable_tensors, 1)
    opt = Op(
        "optimizer step",
        "elementwise",
        "optimizer",
        accesses * trainable_params / grad_accum,
        accesses * trainable_params * 4 / grad_accum,
        kernels,
    )
    prof = time_ops((main, opt), c, tokens)
    return LLMTrainSpeed(prof.samples_per_s, prof.bound, c.basis)
