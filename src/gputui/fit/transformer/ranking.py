"""A transformer workload on every catalog card, and the fewest cards that would hold it.

The order is fit/core/ranking.py's (shared with the graph front-end); this module builds
the transformer's rows and says which of their figures the order reads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from gputui.catalog.models import Architecture, Card
from gputui.fit.core.ranking import order
from gputui.fit.core.roofline import Bound
from gputui.fit.core.target import Target, card_target
from gputui.fit.transformer.estimate import CARD_COUNTS, Estimate, estimate, memory, stage_memories
from gputui.fit.transformer.memory import StageMemory
from gputui.fit.transformer.model import TransformerModel
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
    """One card's row (a fit.core.ranking.RankRow): the estimate, and how few would do."""

    card: Card
    estimate: Estimate
    min_cards: tuple[int, str] | None

    @property
    def fits(self) -> bool:
        return self.estimate.fits

    @property
    def cards_needed(self) -> int | None:
        return self.min_cards[0] if self.min_cards else None

    @property
    def rate(self) -> float | None:
        """tokens/s of the workload's phase; a zero rate places like an unknown one."""
        return self.tokens_per_s or None

    @property
    def rate_floor(self) -> float | None:
        """None: the transformer knows no floor for an unknown rate."""
        return None

    @property
    def tie_break(self) -> float:
        """Nothing further: equal rows keep the catalog's order."""
        return 0.0

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
    architectures: dict[str, Architecture],
    pick: Callable[[Workload, Target], Workload] | None = None,
) -> list[Ranked]:
    """Every card: those that fit first, then by how few cards would do, fastest first.
    `pick`: the strategy for each card (fit.transformer.parallel_choice, when --parallel is not given)."""
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

    return order(out)
