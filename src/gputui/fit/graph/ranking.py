"""A layer model's row on one catalog card, for the one ranking (fit.core.ranking).

The graph says what only it can: its estimate on the card in the card's recommended
precision, and its roofline's samples/s; where the card lacks the figure that precision
needs, a floor it is sure to reach (fit.core.throughput) and the reason."""

from __future__ import annotations

from dataclasses import replace

from gputui.catalog.models import Architecture, Card
from gputui.fit.core.phased import PhasedModel
from gputui.fit.core.power import SAMPLES
from gputui.fit.core.ranking import Ranked, unknown_reason
from gputui.fit.core.target import card_target
from gputui.fit.graph.estimate import MAX_BATCH_CAP, PrecisionEstimate, check
from gputui.fit.graph.rate import speed
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
    "unknown") and is placed by what is known of it, a rate it is sure to reach (see
    fit.core.throughput), rather than as zero; with no floor either it goes after the
    cards of its verdict. Between equally fast cards, the larger batch first.
    """
    from gputui.fit.core.precision import recommend as recommend_for_card
    from gputui.fit.core.throughput import rate

    arch = architectures.get(card.architecture)
    target = card_target(card, architectures)
    name = precision or recommend_for_card(arch, model.mode, card)[0]
    est = check(model, target, batch_size=batch_size, precision=name).estimates[0]
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
    s = est.speed
    unknown = found.tflops is None or (s is not None and s.profile is None)
    reason = unknown_reason(found, card) if unknown else None
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
        # the roofline's figure only: an estimate by another method must not be ranked
        # against roofline ones
        throughput=s.samples_per_s if s is not None and prof is not None else None,
        bound=prof.bound if prof else None,
        bound_share=prof.shares[prof.bound] if prof else None,
        speed_basis=s.basis if s else None,
        speed_derived=s.derived if s else None,
        unknown_reason=reason,
        floor=floor.samples_per_s if floor else None,
        floor_basis=floor.basis if floor else None,
        tie_break=-est.max_batch_size,
        facts={"time_share_by_bound": prof.shares if prof else None},
    )
