"""Fits, tight or does not fit: one rule for every model kind and every limit
(a card's total memory, or what is free on an installed GPU right now)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from gputui.fit.core.breakdown import Breakdown

Verdict = Literal["fits", "tight", "does not fit"]
TIGHT_MARGIN = 0.10  # within 10 % of the limit is "tight"


def verdict(peak: int, limit: int) -> Verdict:
    if peak > limit:
        return "does not fit"
    if peak > limit * (1 - TIGHT_MARGIN):
        return "tight"
    return "fits"


class Answer:
    """What every kind's estimate answers from its breakdown and verdicts.

    A mixin for the engines' frozen, slotted estimates (the layer model's
    PrecisionEstimate, the transformer's Estimate): one reading of "fits".
    """

    __slots__ = ()
    breakdown: Breakdown
    verdict: Verdict
    verdict_free: Verdict | None

    @property
    def peak_bytes(self) -> int:
        return self.breakdown.total

    @property
    def fits(self) -> bool:
        """Fits the GPU's whole memory (a tight fit fits)."""
        return self.verdict != "does not fit"

    @property
    def fits_now(self) -> bool:
        """Fits what is free right now where that is known, else the whole memory."""
        v = self.verdict_free if self.verdict_free is not None else self.verdict
        return v != "does not fit"
