"""Which of a ranked card's figures come from a third party, and the ranking's note.

NVIDIA publishes no figures for some cards (China-market parts, boards it gives AI TOPS
for only). Where a review or reference site published one, the catalog takes it,
marked (`third_party`, `third_party_source`): a card placed by a named third party's
figure is more use than no place, as long as the ranking says so beside it.
"""

from __future__ import annotations

from collections.abc import Iterable

from gputui.catalog.models import Card

MARK = "^"
# the figures a power ranking reads; every other third-party figure is a speed figure
POWER_FIELDS = frozenset({"tdp_w"})


def speed_figures(card: Card) -> tuple[str, ...]:
    """The card's third-party figures a speed estimate may read (rates, bandwidth)."""
    return tuple(f for f in card.third_party if f not in POWER_FIELDS)


def power_is_third_party(card: Card) -> bool:
    return any(f in POWER_FIELDS for f in card.third_party)


def note_lines(cards: Iterable[Card]) -> list[str]:
    """One line per card with a third-party figure: which figures, and who published them."""
    lines = []
    for card in cards:
        if card.third_party:
            lines.append(
                f"  {MARK} third-party figure: {card.name}: {', '.join(card.third_party)} "
                f"(not NVIDIA's; from {card.third_party_source})"
            )
    return lines
