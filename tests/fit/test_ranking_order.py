"""The one catalog order (fit/core/ranking.py) that both front-ends' rankings use:
fits first, then the fewest cards, then fastest (unknown rates placed by their floor,
with none last), then the front-end's tie-break, then the input order."""

from __future__ import annotations

from dataclasses import dataclass

from gputui.fit.core.ranking import order, rank_key


@dataclass(frozen=True)
class Row:
    """A stand-in ranked row: only the figures the order reads (card is a name here)."""

    card: str
    fits: bool = True
    rate: float | None = None
    rate_floor: float | None = None
    cards_needed: int | None = None
    tie_break: float = 0.0


def names(rows: list[Row]) -> list[str]:
    return [r.card for r in order(rows)]


def test_cards_that_fit_come_before_faster_cards_that_do_not() -> None:
    rows = [Row("fast-no", fits=False, rate=1000.0), Row("slow-yes", rate=1.0)]
    assert names(rows) == ["slow-yes", "fast-no"]


def test_faster_first_within_a_verdict() -> None:
    rows = [Row("b", rate=20.0), Row("a", rate=30.0), Row("c", rate=10.0)]
    assert names(rows) == ["a", "b", "c"]


def test_an_unknown_rate_is_placed_by_its_floor_not_as_zero() -> None:
    rows = [Row("known-50", rate=50.0), Row("floor-70", rate_floor=70.0), Row("known-90", rate=90)]
    assert names(rows) == ["known-90", "floor-70", "known-50"]


def test_a_known_rate_wins_over_its_own_floor() -> None:
    rows = [Row("floor-only-60", rate_floor=60.0), Row("known-40", rate=40.0, rate_floor=99.0)]
    assert names(rows) == ["floor-only-60", "known-40"]


def test_no_rate_and_no_floor_goes_after_every_placed_card_of_its_verdict() -> None:
    rows = [
        Row("blind"),
        Row("tiny", rate=0.001),
        Row("floor", rate_floor=0.0),
        Row("blind-no", fits=False),
        Row("no", fits=False, rate=5.0),
    ]
    assert names(rows) == ["tiny", "floor", "blind", "no", "blind-no"]


def test_fewest_cards_come_before_speed_and_uncounted_after_counted() -> None:
    rows = [
        Row("eight-fast", fits=False, cards_needed=8, rate=500.0),
        Row("none-hold", fits=False, cards_needed=None, rate=900.0),
        Row("two-slow", fits=False, cards_needed=2, rate=5.0),
        Row("two-fast", fits=False, cards_needed=2, rate=50.0),
    ]
    assert names(rows) == ["two-fast", "two-slow", "eight-fast", "none-hold"]


def test_tie_break_orders_equal_rates_smaller_first_then_input_order_stays() -> None:
    rows = [
        Row("batch-8", rate=10.0, tie_break=-8),
        Row("batch-64", rate=10.0, tie_break=-64),
        Row("same-1", rate=10.0, tie_break=-8),
        Row("faster", rate=11.0, tie_break=0),
    ]
    assert names(rows) == ["faster", "batch-64", "batch-8", "same-1"]


def test_the_key_is_the_order() -> None:
    rows = [Row("a", rate=1.0), Row("b", fits=False), Row("c", rate_floor=2.0)]
    assert order(rows) == sorted(rows, key=rank_key)
