"""Every kind's catalog ranking ("which card should I pick"): one row type and one order.

A front-end (graph, transformer) only says, per card, what the core cannot work out:
its estimate on that card and the speed of its own op list. It returns that as a
`Ranked` row, the one row type of every kind, whose throughput carries its unit
(samples/s or tokens/s); per-dollar and per-watt are worked out here from the card. The
text and JSON of a ranking (fit.report.ranking_text, fit.report.ranking_json) read only
these rows, and the rules that place them live here once, so the kinds cannot drift apart:

1. the cards where the model fits first;
2. then by the fewest of the card that would hold it, where the front-end counts that
   (a row with no count, or that no count holds, after the counted ones);
3. then fastest first by the front-end's comparable rate; a card whose rate is unknown
   is placed by a rate it is sure to reach (its floor), never as zero, and with no floor
   either it goes after every placed row;
4. then by the front-end's own tie-break, smaller first; rows still equal keep the
   order they came in (the catalog's).

With a budget ("which GPU should I buy for $X"), only the cards whose launch price is
within it are ranked; the cards without a published price follow them, in the same
order, marked "price unknown" (they may be within it); the cards over it are left out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Literal, Protocol, TypeVar

from gputui.catalog.models import Card
from gputui.fit.core import power
from gputui.fit.core.power import Unit
from gputui.fit.core.price import per_dollar
from gputui.fit.core.speed import Phase, Speed


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


E = TypeVar("E")
# Where a row stands against a budget: its launch price is within it, or not published.
BudgetMark = Literal["within", "price unknown"]


@dataclass(frozen=True, slots=True)
class Ranked(Generic[E]):
    """One card's row in a ranking, whatever the model's kind (a RankRow).

    `estimate` is the front-end's own answer on the card, for views that show more of
    it; every figure a ranking prints is a field here. `throughput` is the roofline's
    figure in `unit` per second for `phase` (None: unknown, with `unknown_reason` where
    the front-end knows it); `floor` a rate an unknown card is sure to reach."""

    card: Card
    estimate: E
    precision: str | None  # the precision the card runs the model in (None: not known)
    fits: bool
    verdict: str
    peak_bytes: int
    max_batch_size: int
    batch_unbounded: bool  # max_batch_size is the search's ceiling, not memory's answer
    unit: Unit
    phase: str  # what the throughput measures: "step" (a layer model), "decode", "prefill", "train"
    throughput: float | None
    bound: str | None = None  # what limits it: "compute", "memory" or "launch"
    bound_share: float | None = None  # the bound's share of the time, where known
    speed_basis: str | None = None  # the card figures the speed used
    peak_basis: str | None = None  # what the precision's peak is ("bf16 tensor", "fp32 rate ...")
    speed_derived: bool | None = None  # that figure comes from an architecture rule
    unknown_reason: str | None = None
    floor: float | None = None
    floor_basis: str | None = None
    cards_needed: int | None = None  # the fewest of the card that hold it (None: not counted)
    cards_split: str | None = None  # how those cards split it ("TP 2 x PP 1")
    cards_counted: bool = False  # the front-end counts cards (a None count then means > 64)
    longest_seq_len: int | None = None  # None where the kind has no sequence
    longest_context: int | None = None
    longest_capped: bool = False  # the longest is the model's maximum, not memory's
    tie_break: float = 0.0  # the front-end's last key, smaller first
    facts: Mapping[str, Any] = field(default_factory=dict)  # the kind's own JSON facts
    budget: BudgetMark | None = None  # with a budget: within it, or its price unknown

    @property
    def rate(self) -> float | None:
        """The figure the order reads; a zero rate places like an unknown one."""
        return self.throughput or None

    @property
    def rate_floor(self) -> float | None:
        return self.floor

    @property
    def per_dollar(self) -> float | None:
        """Per launch dollar: only cards with a published USD launch price (MSRP)."""
        return per_dollar(self.throughput, self.card)

    @property
    def per_watt(self) -> float | None:
        """Per watt of the card's power limit (None: no power figure or no speed)."""
        return power.per_watt(self.throughput, self.card)


def rank_cards(
    cards: Iterable[Card], row: Callable[[Card], Ranked[E]], budget_usd: float | None = None
) -> list[Ranked[E]]:
    """Every card's row (the front-end's `row`), in ranking order; with `budget_usd`, the
    cards priced within it, then those without a price (this module's docstring)."""
    if budget_usd is None:
        return order(row(card) for card in cards)
    cards = list(cards)
    within = [
        c for c in cards if c.launch_price_usd is not None and c.launch_price_usd <= budget_usd
    ]
    unpriced = [c for c in cards if c.launch_price_usd is None]
    return [replace(r, budget="within") for r in order(row(c) for c in within)] + [
        replace(r, budget="price unknown") for r in order(row(c) for c in unpriced)
    ]


def over_budget(cards: Iterable[Card], budget_usd: float) -> int:
    """How many cards a budget leaves out (priced above it)."""
    return sum(
        1 for c in cards if c.launch_price_usd is not None and c.launch_price_usd > budget_usd
    )


def speed_fields(speed: Speed | None, phase: Phase) -> dict[str, Any]:
    """The `Ranked` fields that come from a card's `Speed` for the phase ranked, the same
    way for every kind: the throughput, its bound, the figures behind it, or why it is
    unknown and the floor it is placed by."""
    if speed is None:
        return {"throughput": None}
    found = speed.phases.get(phase)
    return {
        "throughput": found.throughput if found is not None else None,
        "bound": found.bound if found is not None else None,
        "bound_share": found.bound_share if found is not None else None,
        "speed_basis": speed.basis or None,
        "peak_basis": speed.peak_basis,
        "speed_derived": speed.derived if found is not None else None,
        "unknown_reason": speed.unknown_reason if found is None else None,
        "floor": speed.floor.get(phase),
        "floor_basis": speed.floor_basis if phase in speed.floor else None,
    }
