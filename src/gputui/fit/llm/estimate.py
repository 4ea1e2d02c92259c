"""From a transformer, a workload and a GPU to answers: peak, verdicts, largest batch,
longest context, rough tokens/s, how many cards, and the ranking of every catalog card.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Literal

from gputui.catalog.models import Card
from gputui.fit.llm.formats import weight_format
from gputui.fit.llm.memory import ITEMS, Parts, Phase, StageMemory, stage_memory, stages
from gputui.fit.llm.model import TransformerModel
from gputui.fit.llm.overheads import (
    ALLOCATOR_SLACK,
    BANDWIDTH_EFFICIENCY,
    EFFICIENCY,
    LAUNCH_OVERHEAD_S,
    Target,
    cuda_context_bytes,
    library_workspace_bytes,
    verdict,
)
from gputui.fit.llm.weights import block_weight_bytes
from gputui.fit.llm.workload import Workload

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
    """Rough throughput: decode by bytes read per step over bandwidth, the rest by FLOPs."""

    decode_tokens_per_s: float | None  # all sequences together
    prefill_tokens_per_s: float | None
    train_tokens_per_s: float | None
    tflops_used: float | None
    bandwidth_gbs: float | None


def context_cap(model: TransformerModel) -> tuple[int, bool]:
    m = model.config.max_position_embeddings
    return (m, True) if m else (MAX_CONTEXT_CAP, False)


def speed(model: TransformerModel, wl: Workload, card: Card, batch: int) -> Speed:
    cfg, lay = model.config, model.layout
    fmt = weight_format(wl.weights if not (wl.training and wl.method == "full") else "bf16")
    tflops = (
        card.tensor_tflops(fmt.tensor_key)
        or card.tensor_tflops("bf16")
        or card.tensor_tflops("fp16")
    )
    if tflops is None:
        tflops = card.fp32_tflops
    k = cfg.moe.experts_per_token if cfg.moe else 0
    active = lay.active_params(k) if cfg.moe else lay.params
    if not cfg.encoder and not cfg.tie_word_embeddings:
        active -= lay.token_embedding  # a lookup, not a matmul
    gpus = max(1, wl.gpus)
    seq = wl.seq_len
    attn_flops = 2 * seq * seq * cfg.q_dim * cfg.num_layers * (0.5 if cfg.decoder else 1.0)
    flops_seq = 2 * active * seq + 2 * attn_flops
    prefill = train = decode = None
    if tflops:
        peak = tflops * 1e12 * EFFICIENCY * gpus
        launch = cfg.num_layers * LAUNCH_OVERHEAD_S  # every layer costs some kernel launches
        prefill = batch * seq / (batch * flops_seq / peak + launch)
        mult = 4 if wl.grad_checkpointing else 3
        if wl.training and wl.method != "full":
            mult -= 1  # frozen weights need no weight gradients
        train = batch * seq / (batch * flops_seq * mult / peak + 3 * launch)
    bw = card.memory_bandwidth_gbs
    if bw and cfg.decoder:
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
        from gputui.fit.llm.kv import kv_cache_bytes

        mean_ctx = wl.seq_len + max(1, wl.new_tokens) // 2
        kv = kv_cache_bytes(cfg, mean_ctx, batch, wl.kv_dtype, mla_cache=wl.mla_cache)
        t_mem = (weights + kv) / (bw * 1e9 * BANDWIDTH_EFFICIENCY * gpus)
        t_compute = 2 * active * batch / (tflops * 1e12 * EFFICIENCY * gpus) if tflops else 0.0
        decode = batch / (max(t_mem, t_compute) + cfg.num_layers * LAUNCH_OVERHEAD_S)
    return Speed(decode, prefill, train, tflops, bw)


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
        speed=speed(model, wl, target.card, wl.batch_size) if target.card else None,
        warnings=tuple(warnings),
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


def rank_cards(
    model: TransformerModel, wl: Workload, cards: tuple[Card, ...], architectures: dict[str, object]
) -> list[Ranked]:
    """Every card: those that fit first, fastest first; then by how few cards would do."""
    out = []
    for card in cards:
        est = estimate(model, wl, card_target(card, architectures))
        out.append(
            Ranked(
                card,
                est,
                min_cards(model, wl, card)
                if not est.fits or wl.gpus == 1
                else (wl.gpus, "as asked"),
            )
        )

    def key(r: Ranked) -> tuple[int, int, float]:
        n = r.min_cards[0] if r.min_cards else 1 << 30
        return (0 if r.estimate.fits else 1, n, -(r.tokens_per_s or 0.0))

    return sorted(out, key=key)
