"""A layer model's row on one catalog card, for the one ranking (fit.core.ranking).

The graph says what only it can: its estimate on the card in the card's recommended
precision, with that estimate's `Speed` (fit.core.speed: samples/s, or unknown with the
reason and a floor it is sure to reach)."""

from __future__ import annotations

from gputui.catalog.models import Architecture, Card
from gputui.fit.core.phased import PhasedModel
from gputui.fit.core.power import SAMPLES
from gputui.fit.core.ranking import Ranked, speed_fields
from gputui.fit.core.target import card_target
from gputui.fit.graph.estimate import MAX_BATCH_CAP, PrecisionEstimate, check
from gputui.fit.graph.spec import ModelSpec


def graph_row(
    model: ModelSpec | PhasedModel,
    architectures: dict[str, Architecture],
    card: Card,
    *,
    batch_size: int | None = None,
    precision: str | None = None,
) -> Ranked[PrecisionEstimate]:
    """The model on `card` in its recommended precision (or `precision`).

    A card whose figure for that precision is unknown keeps throughput None (shown as
    "unknown") and is placed by its floor (fit.core.speed) rather than as zero. Between
    equally fast cards, the larger batch first.
    """
    target = card_target(card, architectures)
    if precision:
        name = precision
        est = check(model, target, batch_size=batch_size, precision=name).estimates[0]
    else:  # the check's own choice: the card's, unless the speed computed says otherwise
        found_check = check(model, target, batch_size=batch_size)
        name, est = found_check.recommended, found_check.chosen
    s = est.speed
    prof = s.profile if s is not None else None
    return Ranked(
        card=card,
        estimate=est,
        precision=name,
        fits=est.fits,
        verdict=est.verdict,
        peak_bytes=est.peak_bytes,
        max_batch_size=est.max_batch_size,
        batch_unbounded=est.max_batch_size >= MAX_BATCH_CAP,
        unit=SAMPLES,
        phase="step",
        **speed_fields(s, "step"),
        tie_break=-est.max_batch_size,
        facts={"time_share_by_bound": prof.shares if prof else None},
    )
