"""Throughput per launch dollar, for both front-ends' rankings (samples/s or tokens/s).

Only cards with a USD launch price NVIDIA published (the catalog's `launch_price_usd`)
get a figure; a card without one gets none, never a guess, and the ranking says how
many were left out.
"""

from __future__ import annotations

from collections.abc import Sequence

from gputui.catalog.models import Card
from gputui.fit.core.power import Unit


def per_dollar(throughput: float | None, card: Card) -> float | None:
    """Throughput per launch dollar (None: no speed or no published price)."""
    price = card.launch_price_usd
    return throughput / price if throughput is not None and price else None


def per_1000_usd(throughput: float | None, card: Card) -> float | None:
    """The JSON's figure: throughput per $1,000 of launch price."""
    per = per_dollar(throughput, card)
    return per * 1000 if per else None


def ranking_lines(
    scored: Sequence[tuple[Card, float | None, bool]], unit: Unit, name_w: int, top: int
) -> list[str]:
    """The per-dollar ranking of (card, throughput, fits): best first; cards without a
    price or a speed, or that do not fit, left out and counted."""
    priced = [(c, per_dollar(t, c)) for c, t, fits in scored if fits and per_dollar(t, c)]
    priced.sort(key=lambda cp: -(cp[1] or 0.0))
    if not priced:
        return []
    lines = [
        f"  per launch dollar (USD launch price where NVIDIA published one; "
        f"{len(scored) - len(priced)} cards without one, or not fitting, left out):"
    ]
    for i, (card, per) in enumerate(priced[:top]):
        lines.append(
            f"    {i + 1:>2} {card.name:<{name_w}} {(per or 0.0) * 1000:>8,.1f} {unit.word}/s "
            f"per $1k (launch price ${card.launch_price_usd:,.0f})"
        )
    return lines
