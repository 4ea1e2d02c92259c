"""A transformer's prefill, decode and training step as roofline ops, timed on a card.

The transformer front-end's op adapter: each phase is a few large `Op`s
(fit/core/roofline.py times them): the whole decoder's matmuls with the bytes its
weights and KV cache move, plus the optimizer step (fit/core/optimizer_traffic.py).
What a model and workload give these numbers is fit/transformer/workload_speed.py;
the `Speed` made of the `Timing` here is fit/core/speed.py's. Figures are labelled
rough wherever they are shown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gputui.catalog.models import Architecture, Card
from gputui.fit.core.interconnect import Link, all_reduce_s
from gputui.fit.core.optimizer_traffic import FUSED_TRAFFIC, OPTIMIZER_TRAFFIC, foreach_launches
from gputui.fit.core.roofline import Op, OpTime, ceilings, op_time, time_ops
from gputui.fit.core.software import OptimizerImpl
from gputui.fit.core.speed import PhaseRate, Timing
from gputui.fit.core.waves import wave_efficiency

# llama.cpp-style decoder graph: per layer two norms and their scales, q/k/v/o and
# three FFN matmuls, rope on q and k, KV-cache copies, attention (QK, softmax, AV),
# the SwiGLU product and two residual adds: about 20 kernels.
KERNELS_PER_LAYER = 20


@dataclass(frozen=True, slots=True)
class StepExtras:
    """The work of a step beside its weight matmuls (fit/transformer/workload_speed.py
    counts it from the model and workload; all zero: the matmuls alone).

    - `elementwise_bytes_per_token`: DRAM traffic of the norms, rotary embedding,
      attention's inputs and output, MLP activation and residual adds (and, training, the
      loss over the vocabulary), over the whole step: memory-bound kernels the matmuls'
      bytes do not include.
    - `adapter_*`: LoRA's adapters, two rank-r matmuls, a scale and an add per targeted
      matrix in the forward and their gradients backward: small kernels that move the
      full activations for little work.
    - `all_reduces`, `all_reduce_bytes_per_token`, `tp`, `link`: tensor parallelism's
      collectives per step and their message per token (fit/core/interconnect.py).
    """

    elementwise_bytes_per_token: float = 0.0
    adapter_bytes_per_token: float = 0.0
    adapter_flops_per_token: float = 0.0
    adapter_kernels: int = 0
    all_reduces: int = 0
    all_reduce_bytes_per_token: float = 0.0
    tp: int = 1
    link: Link | None = None

    def collectives_s(self, tokens: int) -> float:
        """Seconds of the step's all-reduces for `tokens` tokens."""
        if self.tp <= 1 or self.link is None or not self.all_reduces:
            return 0.0
        return self.all_reduces * all_reduce_s(
            self.all_reduce_bytes_per_token * tokens, self.tp, self.link
        )

    def elementwise(self, tokens: int, name: str) -> Op:
        return Op(name, "elementwise", "forward", 0.0, self.elementwise_bytes_per_token * tokens, 0)


NO_EXTRAS = StepExtras()


def generate_timing(
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
    extras: StepExtras = NO_EXTRAS,
) -> Timing | None:
    """Prefill and decode tokens/s of a transformer (phases "prefill", "decode"); None
    without the figures.

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
    - `extras`: the elementwise work and, split over GPUs, the all-reduces each phase
      adds to its matmuls (`StepExtras`); the bound printed is the matmuls'.
    """
    c = ceilings(card, architecture, compute_precision, accumulate16=accumulate16)
    if c is None:
        return None
    kernels = n_layers * KERNELS_PER_LAYER + 3
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
    pp_s = (
        pp.seconds
        + op_time(extras.elementwise(pp_tokens, "prefill elementwise"), c).seconds
        + extras.collectives_s(pp_tokens)
    )

    def step(b: int) -> OpTime:
        flops = b * (2 * params + attention_flops_per_token_pair * context_tokens)
        nbytes = weight_bytes + b * kv_bytes_per_token * context_tokens
        return op_time(Op("decode step", "matmul", "forward", flops, nbytes, kernels, True), c)

    tg = step(batch)
    tg_s = (
        tg.seconds
        + op_time(extras.elementwise(batch, "decode elementwise"), c).seconds
        + extras.collectives_s(batch)
    )
    turn = _compute_bound_batch(step)
    return Timing(
        {
            "prefill": PhaseRate(pp_tokens / pp_s, pp.bound, pp_s),
            "decode": PhaseRate(batch / tg_s, tg.bound, tg_s),
        },
        decode_compute_bound_batch=turn,
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


def train_timing(
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
    extras: StepExtras = NO_EXTRAS,
) -> Timing | None:
    """Training tokens/s of a transformer (phase "train"): the matmuls of `passes` forward-sized passes plus
    the optimizer step; None without the card's figures.

    `passes` counts forward-sized passes: 3 for a full step (forward, then input and
    weight gradients at twice the forward FLOPs), one more with gradient checkpointing
    (the forward is recomputed), one fewer when the base weights are frozen (LoRA:
    no weight gradients for them). Each pass reads every weight once; the optimizer
    step streams `trainable_params` (fp32 master weights and state) once per `grad_accum`
    micro-batches through the kernels of `optimizer_impl`, as fit/graph/step_ops.py's
    `optimizer_ops` counts them: PyTorch's foreach ops (OPTIMIZER_TRAFFIC), one fused kernel (FUSED_TRAFFIC), or the
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
        passes * (n_layers * KERNELS_PER_LAYER + 3),
        True,
    )
    accesses, foreach = OPTIMIZER_TRAFFIC.get(optimizer, OPTIMIZER_TRAFFIC["adamw"])
    launches = foreach_launches(trainable_params, trainable_tensors)
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
    side = (
        extras.elementwise(tokens, "activations and loss"),
        Op(
            "LoRA adapters",
            "elementwise",
            "backward_input",
            extras.adapter_flops_per_token * tokens,
            extras.adapter_bytes_per_token * tokens,
            extras.adapter_kernels,
        ),
    )
    prof = time_ops((main, *side, opt), c, tokens)
    rate = PhaseRate(prof.samples_per_s, prof.bound, prof.step_time_s, prof.shares[prof.bound])
    return Timing({"train": rate})
