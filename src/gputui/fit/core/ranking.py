"""The one order of every kind's catalog ranking ("which card should I pick").

Each front-end (graph, transformer) builds its own rows, which carry its own estimates,
and exposes on them the few figures the order reads (RankRow); the rules that place the
rows live here once, so the kinds cannot drift apart:

1. the cards where the model fits first;
2. then by the fewest of the card that would hold it, where the front-end counts that
   (a row with no count, or that no count holds, after the counted ones);
3. then fastest first by the front-end's comparable rate; a card whose rate is unknown
   is placed by a rate it is sure to reach (its floor), never as zero, and with no floor
   either it goes after every placed row;
4. then by the front-end's own tie-break, smaller first; rows still equal keep the
   order they came in (the catalog's).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar

from gputui.catalog.models import Card


class RankRow(Protocol):
    """What the order reads of one ranked card; each kind's row adds its own estimate."""

    @property
    def card(self) -> Card: ...

    @property
    def fits(self) -> bool:
        """The verdict on this card."""
        ...

    @property
    def cards_needed(self) -> int | None:
        """The fewest of this card that would hold the model; None where the front-end
        does not count them, or where no count it tries holds it."""
        ...

    @property
    def rate(self) -> float | None:
        """The speed figure the front-end ranks by (higher is better); None where it is
        unknown. Only figures of one method, so comparable across cards."""
        ...

    @property
    def rate_floor(self) -> float | None:
        """A rate an unknown card is sure to reach, to place it by; None where none is known."""
        ...

    @property
    def tie_break(self) -> float:
        """The front-end's last key, smaller first."""
        ...


Row = TypeVar("Row", bound=RankRow)


def rank_key(row: RankRow) -> tuple[int, int, int, int, float, float]:
    """The sort key of the rules in this module's docstring."""
    n = row.cards_needed
    placed = row.rate if row.rate is not None else row.rate_floor
    return (
        0 if row.fits else 1,
        0 if n is not None else 1,
        n if n is not None else 0,
        0 if placed is not None else 1,
        -placed if placed is not None else 0.0,
        row.tie_break,
    )


def order(rows: Iterable[Row]) -> list[Row]:
    """The rows in ranking order (a stable sort: equal rows keep their order)."""
    return sorted(rows, key=rank_key)
