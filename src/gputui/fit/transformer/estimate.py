"""From a transformer, a workload and a GPU to answers: peak, verdicts, largest batch,
longest context, rough tokens/s, how many cards, and the ranking of every catalog card.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from gputui.catalog.models import Architecture, Card
from gputui.fit.core.roofline import Bound, ceilings
from gputui.fit.transformer.formats import WeightFormat, weight_format
from gputui.fit.transformer.kv import kv_cache_bytes
from gputui.fit.transformer.memory import ITEMS, Parts, Phase, StageMemory, stage_memory, stages
from gputui.fit.transformer.model import TransformerModel
from gputui.fit.transformer.overheads import (
    ALLOCATOR_SLACK,
    Target,
    cuda_context_bytes,
    library_workspace_bytes,
    verdict,
)
from gputui.fit.transformer.speed import llm_speed, llm_train_speed
from gputui.fit.transformer.weights import block_weight_bytes, lora_params
from gputui.fit.transformer.workload import Workload

Verdict = Literal["fits", "tight", "does not fit"]
MAX_BATCH_CAP = 1 << 20
MAX_CONTEXT_CAP = 1 << 22  # when the config names no maximum
CARD_COUNTS = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True, slots=True)
class Breakdown:
    weights: int
    gradients: int
    optimizer_state: int
    activations: int
    kv_cache: int
    workspace: int
    cuda_context: int
    allocator: int

    @property
    def tensor_bytes(self) -> int:
        return self.total - self.cuda_context - self.allocator

    @property
    def total(self) -> int:
        return (
            self.weights + self.gradients + self.optimizer_state + self.activations
            + self.kv_cache + self.workspace + self.cuda_context + self.allocator
        )  # fmt: skip

    def as_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in (*ITEMS, "cuda_context", "allocator")}


@dataclass(frozen=True, slots=True)
class Memory:
    """Every GPU's phases; the peak is the worst phase on the worst GPU."""

    stages: tuple[StageMemory, ...]
    cuda_context: int
    slack: float
    library: int

    def _wrap(self, parts: Parts) -> Breakdown:
        vals = {k: int(math.ceil(getattr(parts, k))) for k in ITEMS}
        vals["workspace"] += self.library
        tensor = sum(vals.values())
        return Breakdown(**vals, cuda_context=self.cuda_context, allocator=int(tensor * self.slack))

    def breakdown(self, batch: int, seq: int) -> tuple[str, Breakdown]:
        best: tuple[str, Breakdown] | None = None
        for sm in self.stages:
            for ph in sm.phases:
                b = self._wrap(sm.parts(ph, batch, seq))
                if best is None or b.total > best[1].total:
                    name = ph.name if len(self.stages) == 1 else f"{sm.stage.name}: {ph.name}"
                    best = (name, b)
        assert best is not None
        return best

    def peak(self, batch: int, seq: int) -> int:
        """breakdown(batch, seq)[1].total without building the breakdowns (searches call it often)."""
        best = 0
        for sm in self.stages:
            for ph in sm.phases:
                p = sm.parts(ph, batch, seq)
                tensor = (
                    math.ceil(p.weights)
                    + math.ceil(p.gradients)
                    + math.ceil(p.optimizer_state)
                    + math.ceil(p.activations)
                    + math.ceil(p.kv_cache)
                    + math.ceil(p.workspace)
                    + self.library
                )
                best = max(best, tensor + self.cuda_context + int(tensor * self.slack))
        return best

    def max_batch(self, limit: int, seq: int) -> int:
        """The largest batch whose peak is within `limit` (every phase is affine in the batch)."""
        scale = 1 + self.slack
        best = MAX_BATCH_CAP
        for sm in self.stages:
            for ph in sm.phases:
                t0 = self._tensor(sm, ph, 0, seq)
                per = self._tensor(sm, ph, 1, seq) - t0
                fixed = t0 * scale + self.cuda_context
                if fixed > limit:
                    return 0
                if per > 0:
                    best = min(best, int((limit - fixed) // (per * scale)))
        while best > 0 and self.peak(best, seq) > limit:
            best -= 1
        while best < MAX_BATCH_CAP and self.peak(best + 1, seq) <= limit:
            best += 1
        return best

    def _tensor(self, sm: StageMemory, ph: Phase, batch: int, seq: int) -> float:
        return sm.parts(ph, batch, seq).total + self.library

    def longest_seq(self, limit: int, batch: int, cap: int) -> int:
        """The longest sequence (prompt, for generation) whose peak is within `limit` (0: none)."""
        if self.peak(batch, 1) > limit:
            return 0
        if self.peak(batch, cap) <= limit:
            return cap
        lo, hi = 1, cap  # peak(lo) fits, peak(hi) does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.peak(batch, mid) <= limit:
                lo = mid
            else:
                hi = mid
        return lo


def stage_memories(model: TransformerModel, wl: Workload) -> tuple[StageMemory, ...]:
    return tuple(stage_memory(model, wl, st) for st in stages(model, wl))


def memory(
    model: TransformerModel,
    wl: Workload,
    cc: str | None = None,
    built: tuple[StageMemory, ...] | None = None,
) -> Memory:
    """The workload's memory on a GPU of compute capability `cc` (`built`: reuse stages)."""
    sms = built if built is not None else stage_memories(model, wl)
    if wl.backend == "cpu":
        return Memory(sms, 0, 0.0, 0)
    return Memory(sms, cuda_context_bytes(cc), ALLOCATOR_SLACK, library_workspace_bytes(cc))


@dataclass(frozen=True, slots=True)
class Speed:
    """Rough throughput from the per-op roofline (fit.roofline): the one speed model.

    Prefill and training are timed as their matmuls against the tensor peak and the
    bytes they move; decode as one step that reads every weight (shared by the batch)
    and each sequence's KV cache, so it is bandwidth-bound until
    `decode_compute_bound_batch`.
    """

    decode_tokens_per_s: float | None  # all sequences together
    prefill_tokens_per_s: float | None
    train_tokens_per_s: float | None
    tflops_used: float | None  # the tensor (or FP32) peak the matmuls were timed at
    bandwidth_gbs: float | None
    decode_bound: Bound | None = None
    prefill_bound: Bound | None = None
    train_bound: Bound | None = None
    decode_compute_bound_batch: int | None = None  # smallest batch where decode is compute-bound
    compute_precision: str | None = None  # what the matmuls run in (roofline precision name)
    basis: str = ""  # the catalog figures used, e.g. "bf16 tensor 165 TFLOPS, ..., 1008 GB/s"


def context_cap(model: TransformerModel) -> tuple[int, bool]:
    m = model.config.max_position_embeddings
    return (m, True) if m else (MAX_CONTEXT_CAP, False)


# Formats whose prompt (batch > 1 token) matmuls expand the quantized weights to 16 bit
# and call a cuBLAS GEMM: 2 bytes written and 2 read back per weight. bitsandbytes
# (nf4/fp4 and LLM.int8) dequantizes per matmul; llama.cpp (GGUF) does so for batches
# over 32 tokens on its cuBLAS path (which computes in FP16). GPTQ/AWQ kernels
# (ExLlama, Marlin) and fp8 GEMMs read the packed weights directly: nothing extra.
DEQUANT_BYTES_PER_PARAM = 4.0


def _dequant_bytes(fmt: WeightFormat) -> float:
    if not fmt.quantized or fmt.name.startswith(("gptq", "awq", "fp8", "mxfp4")):
        return 0.0
    return DEQUANT_BYTES_PER_PARAM


def _compute_precision(model: TransformerModel, wl: Workload, fmt: WeightFormat) -> str:
    """The roofline precision the matmuls run in: a full fine-tune's precision; otherwise the
    format's compute dtype (fp8 GEMMs where the format is fp8)."""
    if wl.training and wl.method == "full":
        return {"fp32": "fp32", "amp_fp16": "fp16", "fp16": "fp16"}.get(wl.precision, "bf16")
    if fmt.tensor_key == "fp8":
        return "fp8"
    if fmt.compute == "fp32":
        return "fp32"  # PyTorch leaves TF32 off for matmuls by default
    return "fp16" if fmt.compute == "fp16" or fmt.name.startswith("gguf-") else "bf16"


def _usable_precision(card: Card, architecture: Architecture | None, first: str) -> str:
    """`first`, or the 16-bit precision the card runs on tensor cores when it lacks `first`
    (bf16 on Turing, fp8 before Ada: engines fall back to fp16/bf16 kernels)."""
    for name in dict.fromkeys((first, "bf16", "fp16")):
        c = ceilings(card, architecture, name)
        if c is not None and (c.tensor_flops is not None or name == "fp32"):
            return name
    return first


def _decode_weight_bytes(model: TransformerModel, fmt: WeightFormat, batch: int) -> float:
    """Bytes one decode step reads from the weights: every block (for MoE only the experts
    the batch's tokens route to, expected over a uniform router), the LM head."""
    cfg, lay = model.config, model.layout
    k = cfg.moe.experts_per_token if cfg.moe else 0
    weights = 0.0
    for b in lay.blocks:
        wb = block_weight_bytes(b, fmt)
        if b.moe and cfg.moe:
            e = cfg.moe.num_experts
            touched = e * (1 - (1 - k / e) ** batch)
            expert = sum(
                block_weight_bytes(type(b)(1, (x,), 0), fmt) for x in b.linears if x.expert
            )
            wb -= expert * (1 - touched / e)
        weights += wb * b.count
    weights += lay.lm_head * fmt.dense_bytes + (
        lay.token_embedding * fmt.dense_bytes if cfg.tie_word_embeddings else 0
    )
    return weights


def gemm_shapes(model: TransformerModel) -> tuple[tuple[int, int, int], ...]:
    """(out, in, copies over the layers) of every dense weight matrix a token multiplies;
    routed experts are left out (each sees only its share of the tokens)."""
    shapes: dict[tuple[int, int], int] = {}
    for b in model.layout.blocks:
        for lin in b.linears:
            if not lin.expert:
                key = (lin.out_features, lin.in_features)
                shapes[key] = shapes.get(key, 0) + lin.copies * b.count
    cfg = model.config
    if not cfg.encoder:
        head = (cfg.vocab_size, cfg.hidden_size)
        shapes[head] = shapes.get(head, 0) + 1
    return tuple((o, i, n) for (o, i), n in shapes.items())


def trainable_tensors(model: TransformerModel, wl: Workload) -> int:
    """Parameter tensors the optimizer steps (a per-tensor loop launches once for each):
    every weight matrix and bias, two norms per layer, the embedding and the final norm
    (full fine-tune); LoRA's A and B per targeted matrix."""
    from gputui.fit.transformer.weights import targeted

    blocks = model.layout.blocks
    if wl.method != "full":
        return sum(
            2 * lin.copies * b.count
            for b in blocks
            for lin in b.linears
            if targeted(lin, wl.lora_targets)
        )
    mats = sum(
        lin.copies * b.count * (2 if lin.bias_params else 1) for b in blocks for lin in b.linears
    )
    return mats + 2 * model.config.num_layers + 2


def speed(
    model: TransformerModel,
    wl: Workload,
    card: Card,
    batch: int,
    architecture: Architecture | None = None,
) -> Speed:
    """Rough tokens/s on `card` through fit.roofline (llm_speed, llm_train_speed).

    Split over GPUs, tensor parallelism divides each GPU's weights, FLOPs and cache by
    `tp`; pipeline stages run one after another for a batch (no speed-up); data-parallel
    replicas (and ZeRO/FSDP training) multiply throughput. Interconnect time is not
    counted, so multi-GPU figures are optimistic.
    """
    cfg, lay = model.config, model.layout
    fmt = weight_format(wl.weights if not (wl.training and wl.method == "full") else "bf16")
    precision = _usable_precision(card, architecture, _compute_precision(model, wl, fmt))
    k = cfg.moe.experts_per_token if cfg.moe else 0
    active = lay.active_params(k) if cfg.moe else lay.params
    if not cfg.encoder and not cfg.tie_word_embeddings:
        active -= lay.token_embedding  # a lookup, not a matmul
    tp = max(1, wl.tp) if not wl.training else 1
    replicas = max(1, wl.gpus) if wl.training else max(1, wl.gpus // (tp * max(1, wl.pp)))
    attn_pair = 4 * cfg.num_layers * cfg.q_dim
    weights = _decode_weight_bytes(model, fmt, batch)
    c = ceilings(card, architecture, precision)
    tflops = None
    if c is not None:
        tflops = (c.tensor_flops or c.cuda_core_flops) / 1e12
    out = Speed(
        None,
        None,
        None,
        tflops,
        card.memory_bandwidth_gbs,
        compute_precision=precision,
        basis=c.basis if c is not None else "",
    )
    if wl.training:
        passes = 4 if wl.grad_checkpointing else 3
        trainable = lay.params
        if wl.method != "full":
            passes -= 1  # frozen weights need no weight gradients
            trainable = lora_params(lay, wl.lora_targets, wl.lora_rank)
        t = llm_train_speed(
            card,
            architecture,
            params=active,
            trainable_params=trainable,
            weight_bytes=int(weights),
            n_layers=cfg.num_layers,
            attention_flops_per_token_pair=attn_pair,
            seq_len=wl.seq_len,
            batch=batch,
            passes=passes,
            compute_precision=precision,
            causal=cfg.decoder,
            optimizer="sgd"
            if wl.optimizer == "sgd"
            else ("momentum" if wl.optimizer == "sgd_momentum" else "adamw"),
            grad_accum=wl.grad_accum,
            optimizer_impl=wl.optimizer_impl,
            trainable_tensors=trainable_tensors(model, wl),
        )
        if t is None:
            return out
        return replace(out, train_tokens_per_s=t.tokens_per_s * replicas, train_bound=t.bound)
    mean_ctx = wl.seq_len + max(1, wl.new_tokens) // 2 if wl.mode == "generate" else wl.seq_len
    kv_per_token = (
        kv_cache_bytes(cfg, mean_ctx, 1, wl.kv_dtype, mla_cache=wl.mla_cache, tp=tp) / mean_ctx
    )
    s = llm_speed(
        card,
        architecture,
        params=active // tp,
        weight_bytes=int(weights / tp),
        n_layers=cfg.num_layers,
        kv_bytes_per_token=int(kv_per_token),
        attention_flops_per_token_pair=(attn_pair if cfg.decoder else 2 * attn_pair) // tp,
        prompt_tokens=wl.seq_len,
        context_tokens=mean_ctx,
        batch=batch,
        compute_precision=precision,
        dequant_bytes_per_param=_dequant_bytes(fmt),
        accumulate16=fmt.name.startswith("gguf-"),
        gemm_shapes=tuple((o // tp, i, n) for o, i, n in gemm_shapes(model)),
    )
    if s is None:
        return out
    decoder = cfg.decoder and wl.mode == "generate"
    return replace(
        out,
        prefill_tokens_per_s=s.prefill_tokens_per_s * replicas,
        prefill_bound=s.prefill_bound,
        decode_tokens_per_s=s.decode_tokens_per_s * replicas if decoder else None,
        decode_bound=s.decode_bound if decoder else None,
        decode_compute_bound_batch=s.decode_compute_bound_batch if decoder else None,
    )


@dataclass(frozen=True, slots=True)
class Estimate:
    model: TransformerModel
    workload: Workload
    target: Target
    peak_phase: str
    breakdown: Breakdown
    limit_bytes: int
    verdict: Verdict
    max_batch_size: int
    longest_seq: int  # prompt tokens for generate; 0 when even one token does not fit
    longest_capped: bool  # the answer is the model's max_position_embeddings, not memory
    free_bytes: int | None = None
    verdict_free: Verdict | None = None
    max_batch_size_free: int | None = None
    longest_seq_free: int | None = None
    speed: Speed | None = None
    warnings: tuple[str, ...] = field(default=())
    # longest_seq is where the search stopped (no maximum context known), not an answer
    longest_at_search_limit: bool = False

    @property
    def peak_bytes(self) -> int:
        return self.breakdown.total

    @property
    def fits(self) -> bool:
        return self.verdict != "does not fit"

    @property
    def fits_now(self) -> bool:
        v = self.verdict_free if self.verdict_free is not None else self.verdict
        return v != "does not fit"

    @property
    def longest_context(self) -> int:
        return self.longest_seq + (
            self.workload.new_tokens if self.workload.mode == "generate" and self.longest_seq else 0
        )


def estimate(
    model: TransformerModel,
    wl: Workload,
    target: Target,
    built: tuple[StageMemory, ...] | None = None,
) -> Estimate:
    cc = target.compute_capability or (target.card.compute_capability if target.card else None)
    mem = memory(model, wl, cc, built)
    phase, b = mem.breakdown(wl.batch_size, wl.seq_len)
    limit = target.memory_total
    cap, _known = context_cap(model)
    cap = cap - (wl.new_tokens if wl.mode == "generate" else 0)
    if wl.seq_len > cap and not model.config.learned_positions:
        # asked beyond the configured maximum (RoPE scaling): memory is the only limit
        cap, _known = MAX_CONTEXT_CAP, False
    cap = max(cap, 1)
    longest = mem.longest_seq(limit, wl.batch_size, cap)
    warnings = list(model.warnings)
    if longest >= cap and not _known:
        # the search's own ceiling, not an answer: say so rather than print it as one
        warnings.append(
            f"the config names no maximum context (max_position_embeddings): the longest "
            f"{'prompt' if wl.mode == 'generate' else 'sequence'} was searched up to "
            f"{cap:,} tokens only; the model itself may allow fewer"
        )
    if model.config.max_position_embeddings and wl.context > model.config.max_position_embeddings:
        warnings.append(
            f"context {wl.context:,} is beyond the model's max_position_embeddings "
            f"{model.config.max_position_embeddings:,}"
        )
    est = Estimate(
        model,
        wl,
        target,
        phase,
        b,
        limit,
        verdict(b.total, limit),
        mem.max_batch(limit, wl.seq_len),
        longest,
        longest == cap and _known,
        speed=speed(model, wl, target.card, wl.batch_size, target.architecture)
        if target.card
        else None,
        warnings=tuple(warnings),
        longest_at_search_limit=longest >= cap and not _known,
    )
    if target.memory_free is not None:
        free = target.memory_free
        est = replace(
            est,
            free_bytes=free,
            verdict_free=verdict(b.total, free),
            max_batch_size_free=mem.max_batch(free, wl.seq_len),
            longest_seq_free=mem.longest_seq(free, wl.batch_size, cap),
        )
    return est


def card_target(card: Card, architectures: dict[str, object] | None = None) -> Target:
    arch = architectures.get(card.architecture) if architectures else None
    return Target(card.name, card.memory_bytes, arch, card, card.compute_capability)  # type: ignore[arg-type]


def scaled_workload(model: TransformerModel, wl: Workload, n: int) -> Workload | None:
    """`wl` spread over n GPUs the usual way: tensor parallel within 8, pipeline beyond;
    full fine-tunes shard with ZeRO-3 (FSDP-like); None when the model cannot split n ways."""
    cfg = model.config
    if n == 1:
        return replace(wl, gpus=1, tp=1, pp=1, parallel="none")
    if wl.training:
        return replace(wl, gpus=n, tp=1, pp=1, parallel="zero3")
    tp = min(n, 8)
    pp = n // tp
    if cfg.num_heads % tp or pp > cfg.num_layers:
        return None
    return replace(wl, gpus=n, tp=tp, pp=pp, parallel="tp" if pp == 1 else "pp")


def min_cards(
    model: TransformerModel,
    wl: Workload,
    card: Card,
    cache: dict[int, tuple[Workload, tuple[StageMemory, ...]] | None] | None = None,
) -> tuple[int, str] | None:
    """The fewest of this card that hold the workload (and how they split it), if 64 do.

    `cache` keeps each card count's phases across cards (they differ only in overheads)."""
    target = card_target(card)
    cache = {} if cache is None else cache
    for n in CARD_COUNTS:
        if n not in cache:
            swl0 = scaled_workload(model, wl, n)
            cache[n] = None if swl0 is None else (swl0, stage_memories(model, swl0))
        entry = cache[n]
        if entry is None:
            continue
        swl, built = entry
        mem = memory(model, swl, card.compute_capability, built)
        if mem.peak(wl.batch_size, wl.seq_len) <= target.memory_total:
            how = (
                "1 GPU"
                if n == 1
                else (
                    f"ZeRO-3 over {n}" if swl.parallel == "zero3" else f"TP {swl.tp} x PP {swl.pp}"
                )
            )
            return n, how
    return None


@dataclass(frozen=True, slots=True)
class Ranked:
    card: Card
    estimate: Estimate
    min_cards: tuple[int, str] | None

    @property
    def tokens_per_s(self) -> float | None:
        s = self.estimate.speed
        if s is None:
            return None
        mode = self.estimate.workload.mode
        return (
            s.train_tokens_per_s
            if mode == "train"
            else (s.decode_tokens_per_s if mode == "generate" else s.prefill_tokens_per_s)
        )

    @property
    def bound(self) -> Bound | None:
        """What limits the phase `tokens_per_s` measures (compute, memory or launch)."""
        s = self.estimate.speed
        if s is None:
            return None
        mode = self.estimate.workload.mode
        if mode == "train":
            return s.train_bound
        return s.decode_bound if mode == "generate" else s.prefill_bound


def rank_cards(
    model: TransformerModel,
    wl: Workload,
    cards: tuple[Card, ...],
    architectures: dict[str, object],
    pick: Callable[[Workload, Target], Workload] | None = None,
) -> list[Ranked]:
    """Every card: those that fit first, fastest first; then by how few cards would do.
    `pick`: the strategy for each card (fit.llm.parallel_choice, when --parallel is not given)."""
    out = []
    for card in cards:
        target = card_target(card, architectures)
        cwl = pick(wl, target) if pick is not None else wl
        est = estimate(model, cwl, target)
        out.append(
            Ranked(
                card,
                est,
                min_cards(model, wl, card)
                if not est.fits or wl.gpus == 1
                else (wl.gpus, "as asked" if cwl.parallel == wl.parallel else cwl.parallel),
            )
        )

    def key(r: Ranked) -> tuple[int, int, float]:
        n = r.min_cards[0] if r.min_cards else 1 << 30
        return (0 if r.estimate.fits else 1, n, -(r.tokens_per_s or 0.0))

    return sorted(out, key=key)
