"""A transformer workload's row on one catalog card, for the one ranking
(fit.core.ranking), and the fewest cards that would hold it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from gputui.catalog.models import Architecture, Card
from gputui.fit.core.power import TOKENS
from gputui.fit.core.ranking import Ranked, speed_fields
from gputui.fit.core.speed import Phase
from gputui.fit.core.target import Target, card_target
from gputui.fit.transformer.estimate import (
    CARD_COUNTS,
    MAX_BATCH_CAP,
    Estimate,
    engine_limit,
    estimate,
    memory,
    stage_memories,
)
from gputui.fit.transformer.memory import StageMemory
from gputui.fit.transformer.model import TransformerModel
from gputui.fit.transformer.savers import cheap_savers
from gputui.fit.transformer.workload import Workload


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
    one = _one_with_a_saver(model, wl, card, target.memory_total)
    if one is not None:
        return 1, one
    for n in CARD_COUNTS:
        if n not in cache:
            swl0 = scaled_workload(model, wl, n)
            cache[n] = None if swl0 is None else (swl0, stage_memories(model, swl0))
        entry = cache[n]
        if entry is None:
            continue
        swl, built = entry
        mem = memory(model, swl, card.compute_capability, built)
        if mem.peak(wl.batch_size, wl.seq_len) <= engine_limit(wl, target.memory_total):
            how = (
                "1 GPU"
                if n == 1
                else (
                    f"ZeRO-3 over {n}" if swl.parallel == "zero3" else f"TP {swl.tp} x PP {swl.pp}"
                )
            )
            return n, how
    return None


def _one_with_a_saver(
    model: TransformerModel, wl: Workload, card: Card, limit: int
) -> str | None:
    """How one card holds a training job it does not hold as asked: the cheapest saver that
    keeps the method (fit.transformer.savers), before any second card is counted."""
    if not wl.training:
        return None
    cc = card.compute_capability
    if memory(model, replace(wl, gpus=1, tp=1, pp=1, parallel="none"), cc).peak(
        wl.batch_size, wl.seq_len
    ) <= limit:
        return None
    for saver in cheap_savers(replace(wl, gpus=1, tp=1, pp=1, parallel="none"), cc):
        if memory(model, saver.workload, cc).peak(wl.batch_size, wl.seq_len) <= limit:
            return f"with {saver.flags}"
    return None


def transformer_row(
    model: TransformerModel,
    wl: Workload,
    architectures: dict[str, Architecture],
    card: Card,
    *,
    pick: Callable[[Workload, Target], Workload] | None = None,
) -> Ranked[Estimate]:
    """The workload on `card`, and how few of it would do; the throughput is the tokens/s
    of the workload's phase (train, decode, or prefill). `pick`: the strategy for each
    card (fit.transformer.parallel_choice, when --parallel is not given)."""
    target = card_target(card, architectures)
    cwl = pick(wl, target) if pick is not None else wl
    est = estimate(model, cwl, target)
    need = (
        min_cards(model, wl, card)
        if not est.fits or wl.gpus == 1
        else (wl.gpus, "as asked" if cwl.parallel == wl.parallel else cwl.parallel)
    )
    s = est.speed
    mode = est.workload.mode
    phase: Phase = "train" if mode == "train" else ("decode" if mode == "generate" else "prefill")
    return Ranked(
        card=card,
        estimate=est,
        precision=s.precision if s is not None else None,
        fits=est.fits,
        verdict=est.verdict,
        peak_bytes=est.peak_bytes,
        max_batch_size=est.max_batch_size,
        batch_unbounded=est.max_batch_size >= MAX_BATCH_CAP,
        unit=TOKENS,
        phase=phase,
        **speed_fields(s, phase),
        cards_needed=need[0] if need else None,
        cards_split=need[1] if need else None,
        cards_counted=True,
        longest_seq_len=est.longest_seq,
        longest_context=est.longest_context,
        longest_capped=est.longest_capped,
        facts={
            "decode_compute_bound_batch": s.decode_compute_bound_batch if s else None,
            "parallel": est.workload.parallel,
        },
    )
