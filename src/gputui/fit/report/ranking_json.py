"""The JSON rows of a ranking, for every model kind: one builder, one shape.

Every row has the same keys whatever the kind (docs/fit.md, "ranking"): the throughput
with its unit and phase, per launch dollar and per watt, cards needed and the longest
sequence where the kind knows them (null where not), and the kind's own facts in one
nested object, `kind_facts`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gputui.fit.core import power, price
from gputui.fit.core.ranking import Ranked


def throughput_unit(r: Ranked[Any]) -> str:
    """'samples/s' or 'tokens/s'."""
    return f"{r.unit.word}/s"


def ranking_rows(ranked: Sequence[Ranked[Any]]) -> list[dict[str, Any]]:
    return [ranking_row(i + 1, r) for i, r in enumerate(ranked)]


def ranking_row(rank: int, r: Ranked[Any]) -> dict[str, Any]:
    return {
        "rank": rank,
        "card": r.card.name,
        "precision": r.precision,
        "memory_bytes": r.card.memory_bytes,
        "peak_bytes": r.peak_bytes,
        "verdict": r.verdict,
        "fits": r.fits,
        "max_batch_size": r.max_batch_size,
        "longest_seq_len": r.longest_seq_len,
        "longest_context": r.longest_context,
        "throughput": r.throughput,
        "throughput_unit": throughput_unit(r),
        "throughput_phase": r.phase,
        "throughput_floor": r.floor,
        "bound": r.bound,
        "speed_basis": r.speed_basis,
        "speed_figure_derived": r.speed_derived,
        "speed_unknown_reason": r.unknown_reason,
        "cards_needed": r.cards_needed,
        "cards_split": r.cards_split,
        "launch_price_usd": r.card.launch_price_usd,
        "throughput_per_1000_usd": price.per_1000_usd(r.throughput, r.card),
        "third_party_figures": list(r.card.third_party),
        "power_limit_w": r.card.tdp_w,
        "throughput_per_watt": r.per_watt,
        "budget": r.budget,
        "energy_at_power_limit": power.energy(r.throughput, r.card, r.unit),
        "energy_unit": f"{r.unit.energy_word} per {r.unit.amount_text}",
        "kind_facts": dict(r.facts),
    }
