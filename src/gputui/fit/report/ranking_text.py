"""The text of a ranking, for every model kind: one table, one set of notes.

The caller gives the title (the model's own description, which differs by kind); the
rows are fit.core.ranking's, so the columns are the same for every kind. A column only
one kind fills (the longest sequence, the cards needed) shows when a row has it.
Lines are made visible (textsafe) as rendered: model and card names come from files.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gputui.core.textsafe import visible
from gputui.fit.core import power, price, third_party
from gputui.fit.core.ranking import Ranked
from gputui.fit.core.roofline import EFFICIENCY
from gputui.fit.units import gib

NAME_WIDTH = 30


def throughput_label(r: Ranked[Any]) -> str:
    """The throughput column's heading: 'samples/s', 'decode tok/s'."""
    return f"{r.unit.word}/s" if r.phase == "step" else f"{r.phase} tok/s"


def throughput_cell(r: Ranked[Any]) -> str:
    """'~1,234^': ~ a derived card figure, ^ a third-party one; 'unknown' where none."""
    if not r.throughput:
        return "unknown"
    mark = "~" if r.speed_derived else ""
    after = third_party.MARK if third_party.speed_figures(r.card) else ""
    return f"{mark}{r.throughput:,.0f}{after}"


def bound_cell(r: Ranked[Any]) -> str:
    """'memory 68%' (with the bound's share where known), or '-'."""
    if r.bound is None:
        return "-"
    return f"{r.bound} {r.bound_share:.0%}" if r.bound_share is not None else r.bound


def price_cell(r: Ranked[Any]) -> str:
    """'$1,599' (the USD launch price), 'unknown' where none was published."""
    price = r.card.launch_price_usd
    return f"${price:,.0f}" if price else "unknown"


def per_watt_cell(r: Ranked[Any]) -> str:
    per = r.per_watt
    return f"{per:,.1f}" if per else "-"


def batch_note(batch: int, source: str) -> str:
    """The line saying which batch the ranking's speed and verdict are at, and where it
    came from: the ranking is at one batch, not at each card's largest."""
    hint = "" if source == "--batch-size" else "; --batch-size N ranks at another"
    return (
        f"  ranked at batch {batch:,} ({source}{hint}): speed, per $ and per W are at that "
        "batch; 'max batch' is each card's largest"
    )


def budget_lines(ranked: Sequence[Ranked[Any]], budget_usd: float, over: int) -> list[str]:
    """What a budget did to the ranking (fit.core.ranking.rank_cards)."""
    within = sum(1 for r in ranked if r.budget == "within")
    unknown = len(ranked) - within
    return [
        f"  budget ${budget_usd:,.0f} (USD launch price): {within} cards within it ranked, "
        f"{over} over it left out, {unknown} without a published price listed after them"
    ]


def render_ranking(
    title: Sequence[str],
    ranked: Sequence[Ranked[Any]],
    seq_word: str = "sequence",
    top: int = 10,
    *,
    batch: str | None = None,
    budget: tuple[float, int] | None = None,
) -> list[str]:
    """The table of `ranked` under `title`, then its notes and the per-dollar and per-watt
    rankings of the `top` cards. `batch`: the line saying what batch it is ranked at
    (`batch_note`); `budget`: (USD, cards left out over it) when one was asked."""
    name_w = max([NAME_WIDTH, *(len(r.card.name) for r in ranked)])
    longest = any(r.longest_seq_len is not None for r in ranked)
    counted = any(r.cards_counted for r in ranked)
    label = throughput_label(ranked[0]) if ranked else "throughput"
    head = (
        f"  {'#':>2} {'card':<{name_w}} {'precision':<9} {'memory':>10} {'peak':>10} "
        f"{'verdict':<12} {'max batch':>10}"
    )
    head += f" {'longest ' + seq_word:>16}" if longest else ""
    head += f" {label:>13} {'bound':<12}"
    head += f" {'cards needed':>16}" if counted else ""
    head += f" {'launch price':>12} {'per $1k':>9} {'per W':>8}"
    lines = [*title]
    lines += [batch] if batch else []
    lines += budget_lines(ranked, *budget) if budget else []
    lines.append(head)
    unknown_shown = False
    for i, r in enumerate(ranked):
        if r.budget == "price unknown" and not unknown_shown:
            unknown_shown = True
            lines.append(
                "  -- price unknown (no published launch price; may be within the budget):"
            )
        row = (
            f"  {i + 1:>2} {r.card.name:<{name_w}} {r.precision or '-':<9} "
            f"{gib(r.card.memory_bytes):>10} {gib(r.peak_bytes):>10} {r.verdict:<12} "
            f"{'unbounded' if r.batch_unbounded else f'{r.max_batch_size:,}':>10}"
        )
        if longest:
            seq = f"{r.longest_seq_len:,}" if r.longest_seq_len is not None else "-"
            row += f" {seq + ('*' if r.longest_capped else ' '):>16}"
        row += f" {throughput_cell(r):>13} {bound_cell(r):<12}"
        if counted:
            need = f"{r.cards_needed} ({r.cards_split})" if r.cards_needed else "> 64"
            row += f" {need:>16}"
        per = r.per_dollar
        row += f" {price_cell(r):>12} {(f'{per * 1000:,.1f}' if per else '-'):>9}"
        lines.append(row + f" {per_watt_cell(r):>8}")
    lines += notes(ranked, longest, counted)
    scored = [(r.card, r.throughput, r.fits) for r in ranked]
    if ranked:
        lines += price.ranking_lines(scored, ranked[0].unit, name_w, top)
        lines += power.ranking_lines(scored, ranked[0].unit, name_w, top)
    return [visible(line) for line in lines]


def notes(ranked: Sequence[Ranked[Any]], longest: bool, counted: bool) -> list[str]:
    """What the table's marks mean, and why a card's speed is unknown."""
    legend = (
        f"  (speed is rough: a roofline, matmuls at {EFFICIENCY['matmul']:.0%} of the card's "
        "peak; bound: what limits the work ranked"
    )
    legend += (
        "; per $1k: throughput per $1,000 of the USD launch price; per W: per watt of the "
        "power limit"
    )
    if counted:
        legend += (
            "; cards needed: tensor parallel up to 8, then pipeline; training shards with ZeRO-3"
        )
    if longest:
        legend += "; * the model's maximum context, not memory"
    lines = [legend + ")"]
    if any(r.speed_derived for r in ranked):
        lines.append(
            "  ~ the card's figure for that precision is derived from an architecture rule "
            "(see `gputui catalog show CARD`)"
        )
    lines += third_party.note_lines(r.card for r in ranked)
    for r in ranked:
        if r.unknown_reason is not None:
            placed = (
                f"placed by {r.floor_basis}, a rate it is sure to reach"
                if r.floor is not None
                else "placed last"
            )
            lines.append(f"  unknown: {r.card.name}: {r.unknown_reason} ({placed})")
    for r in ranked:
        if r.peak_basis is not None and r.peak_basis.startswith("fp32 rate"):
            lines.append(f"  note: {r.card.name} runs {r.precision} at its {r.peak_basis}")
    return lines
