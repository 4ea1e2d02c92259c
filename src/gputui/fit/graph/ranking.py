"""A layer model on every catalog card: fitting cards first, fastest first.

The order is fit/core/ranking.py's (shared with the transformer front-end); this module
builds the graph's rows and says which of their figures the order reads."""

from __future__ import annotations

from dataclasses import dataclass, replace

from gputui.catalog.models import Architecture, Card
from gputui.fit.core.ranking import order
from gputui.fit.core.roofline import missing_figure
from gputui.fit.core.target import card_target
from gputui.fit.graph.estimate import PrecisionEstimate, check
from gputui.fit.graph.gcpause import collector_paused
from gputui.fit.graph.rate import Speed, speed
from gputui.fit.graph.spec import ModelSpec


@dataclass(frozen=True, slots=True)
class Ranked:
    """One card's row (a fit.core.ranking.RankRow): the graph's estimate in one precision."""

    card: Card
    precision: str
    estimate: PrecisionEstimate
    unknown_reason: str | None = None  # why the speed is unknown (the figure it would need)
    lower_bound: Speed | None = None  # a known floor used to place an unknown card

    @property
    def fits(self) -> bool:
        return self.estimate.fits

    @property
    def cards_needed(self) -> int | None:
        """Not counted: the graph ranks one card at a time."""
        return None

    @property
    def rate(self) -> float | None:
        return self.samples_per_s

    @property
    def rate_floor(self) -> float | None:
        return self.lower_bound.samples_per_s if self.lower_bound else None

    @property
    def tie_break(self) -> float:
        """Between equally fast cards, the one with room for the larger batch first."""
        return -self.estimate.max_batch_size

    @property
    def samples_per_s(self) -> float | None:
        """The roofline's figure; None where the card's figures allow no roofline (an
        estimate by another method must not be ranked against roofline ones)."""
        s = self.estimate.speed
        return s.samples_per_s if s is not None and s.profile is not None else None

    @property
    def samples_per_s_per_dollar(self) -> float | None:
        """Per launch dollar: only cards with a published USD launch price (MSRP)."""
        s = self.samples_per_s
        price = self.card.launch_price_usd
        return s / price if s is not None and price else None


@collector_paused
def rank_cards(
    model: ModelSpec,
    cards: tuple[Card, ...],
    architectures: dict[str, Architecture],
    *,
    batch_size: int | None = None,
    precision: str | None = None,
) -> list[Ranked]:
    """The model on every card in its recommended precision: fitting cards first, fastest first.

    A card whose figure for that precision is unknown keeps speed None (shown as
    "unknown") and is placed by what is known of it, a rate it is sure to reach (see
    fit.core.throughput), rather than as zero; with no floor either it goes after the cards
    of its verdict.
    """
    from gputui.fit.core.precision import recommend as recommend_for_card
    from gputui.fit.core.throughput import rate

    out = []
    for card in cards:
        arch = architectures.get(card.architecture)
        target = card_target(card, architectures)
        name = precision or recommend_for_card(arch, model.mode, card)[0]
        result = check(model, target, batch_size=batch_size, precision=name)
        est = result.estimates[0]
        found = rate(card, arch, name)
        floor = None
        if found.tflops is None and found.lower_bound_tflops is not None:
            # The roofline at the floor rate: the card with that figure in place of the
            # unknown one (a rate it is sure to reach), so the floor is priced like the rest.
            assert found.figure is not None
            floored = card.model_copy(update={found.figure: found.lower_bound_tflops})
            floor = speed(model, floored, name, est.batch_size, model.mode, arch)
            if floor is not None:
                floor = replace(floor, basis=found.lower_bound_basis or "a floor", derived=False)
        reason = found.unknown_reason if found.tflops is None else None
        if reason is None and est.speed is not None and est.speed.profile is None:
            reason = (
                f"{missing_figure(card) or 'a figure missing'}, which the roofline needs "
                "for the ops tensor cores do not run"
            )
        out.append(Ranked(card, name, est, reason, floor))

    return order(out)
