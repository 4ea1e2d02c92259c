"""Fits, tight or does not fit: one rule for every model kind and every limit
(a card's total memory, or what is free on an installed GPU right now)."""

from __future__ import annotations

from typing import Literal

Verdict = Literal["fits", "tight", "does not fit"]
TIGHT_MARGIN = 0.10  # within 10 % of the limit is "tight"


def verdict(peak: int, limit: int) -> Verdict:
    if peak > limit:
        return "does not fit"
    if peak > limit * (1 - TIGHT_MARGIN):
        return "tight"
    return "fits"
