"""Step time from a roofline per op: max(FLOPs / compute peak, bytes / bandwidth) + launches.

Why: FLOPs at a fixed fraction of the datasheet peak rank cards by their tensor
figure alone, so a 300 GB/s L4 came out ahead of a 936 GB/s RTX 3090. Real steps
are a mix of compute-bound matrix maths, memory-bound normalisations,
activations and optimizer updates, and kernels too small to amortise their
launch. Each op is therefore timed against the ceiling that limits it:

    time(op) = max(flops / (peak_of_its_class x eff), bytes / (bandwidth x eff))
               + kernels x LAUNCH_S

Ops are described neutrally (`Op`: class, pass, FLOPs, bytes, kernels) so each
front-end only needs an adapter from its own description of a model: the layer
graph's in fit/graph/ops.py and fit/graph/step_ops.py, the transformer's in
fit/transformer/step_ops.py. A new engine changes an adapter, not the timing, and this
module imports neither front-end; the one `Speed` made of its times, and the policy
for a card figure it lacks, are fit/core/speed.py's. Pure: no NVML, no UI.

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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from gputui.catalog.models import Architecture, Card
from gputui.fit.core.precision import Precision, has_tensor, policy
from gputui.fit.core.waves import gemm_depth, gemm_waves, split_k_bytes

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

# Wave quantisation and split-K: fit/core/waves.py. Applied where the GEMM shapes are
# known, on top of the matmul efficiency: LLM prefill (fit/transformer/step_ops.py's
# `gemm_shapes`), and in layer models the forward and input-gradient GEMMs of dense and
# convolution layers and attention's projections (`Op.gemm`; convolutions as implicit
# GEMMs, one output row per batch position). Weight-gradient GEMMs are left out: their
# output is the small weight matrix and their reduction runs over the whole batch, which
# cuBLAS/cuDNN split across SMs (split-K) instead of leaving them idle.
# PyTorch's multi_tensor_apply (foreach optimizers): at most 48 tensors of a


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
    split_k: bool = False  # a cuBLAS GEMM, whose K it splits across idle SMs (waves.py)


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
    from gputui.fit.core.peak_rate import rate

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


def tensor_aligned(p: Precision, *dims: int) -> bool:
    """Whether channel counts `dims` let cuBLAS/cuDNN pick tensor-core kernels in `p`."""
    width = p.low_copy_bytes if p.amp else p.act_bytes
    align = TENSOR_ALIGN.get(width, 1)
    return all(d % align == 0 for d in dims)


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


# A front-end's ops for one step in a precision, with their compiled form (cached by the
# front-end: a ranking times the same list on every card).
OpsFor = Callable[[str], tuple[Sequence[Op], Compiled]]


def best_profile(
    card: Card,
    architecture: Architecture | None,
    precision: str,
    batch: int,
    ops_for: OpsFor,
) -> Profile | None:
    """The roofline step time of `ops_for(precision)` on `card`; None when a figure it
    needs is unknown.

    TF32 mode lets cuDNN and cuBLAS run FP32 CUDA-core kernels where they are faster
    (it allows TF32, it does not force it): on cards whose TF32 tensor rate is no more
    than their FP32 rate (GeForce Ampere and Ada) the tensor path's NCHW transposes make
    it the slower one. So under tf32 the whole step is timed on either path and the
    faster one kept; a per-call choice could be faster still.
    """
    c = ceilings(card, architecture, precision)
    if c is None:
        return None
    ops, compiled = ops_for(precision)
    prof = time_ops(ops, c, batch, compiled)
    if precision == "tf32" and c.tensor_flops is not None:
        fp32 = ceilings(card, architecture, "fp32")
        if fp32 is not None:
            ops32, compiled32 = ops_for("fp32")
            alt = time_ops(ops32, fp32, batch, compiled32)
            if alt.step_time_s < prof.step_time_s:
                return alt
    return prof
