"""Throughput per watt and energy per unit of work, from the card's power limit.

Power matters to people choosing a card as much as price. The catalog's `tdp_w` is
the board's power limit (TDP / total graphics power as NVIDIA gives it), so the
energy figures here are what the work costs at that limit: an upper bound, since a
card the model does not load fully draws less. A card without a published power
figure gets none (never a guess); the ranking says how many were left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gputui.catalog.models import Card
from gputui.fit.core.third_party import MARK


@dataclass(frozen=True, slots=True)
class Unit:
    """What is counted: the throughput's word and the amount energy is given for."""

    word: str  # "samples" or "tokens"
    amount: int  # 1,000 samples or 1,000,000 tokens
    amount_text: str  # "1,000 samples", "1M tokens"
    energy_word: str  # "J" or "Wh"
    joules_per_energy: float  # 1 for J, 3,600 for Wh
    energy_key: str  # its JSON field


SAMPLES = Unit("samples", 1_000, "1,000 samples", "J", 1.0, "joules_per_1000_samples")
TOKENS = Unit("tokens", 1_000_000, "1M tokens", "Wh", 3600.0, "wh_per_1m_tokens")


def per_watt(throughput: float | None, card: Card) -> float | None:
    """Units per second per watt of the card's power limit; None when either is unknown."""
    if throughput is None or not card.tdp_w or throughput <= 0:
        return None
    return throughput / card.tdp_w


def energy(throughput: float | None, card: Card, unit: Unit) -> float | None:
    """Energy of `unit.amount` units at the power limit, in `unit.energy_word`."""
    rate = per_watt(throughput, card)
    if rate is None:
        return None
    return unit.amount / rate / unit.joules_per_energy


def tflops_per_watt(card: Card) -> float | None:
    """The card's bf16 tensor TFLOPS per watt of its power limit (the Catalog screen's
    column), rounded to 0.01; None when either figure is unknown."""
    if card.bf16_tensor_tflops is None or not card.tdp_w:
        return None
    return round(card.bf16_tensor_tflops / card.tdp_w, 2)


def json_fields(
    throughput: float | None, card: Card, unit: Unit
) -> dict[str, float | list[str] | None]:
    """The JSON fields a ranked card gains (each null where a figure is unknown), with the
    card's figures that come from a third party (catalog `third_party`)."""
    return {
        "third_party_figures": list(card.third_party),
        "power_limit_w": card.tdp_w,
        f"{unit.word}_per_s_per_watt": per_watt(throughput, card),
        unit.energy_key: energy(throughput, card, unit),
    }


def ranking_lines(
    scored: Sequence[tuple[Card, float | None, bool]], unit: Unit, name_w: int, top: int
) -> list[str]:
    """The per-watt ranking of (card, throughput, fits): best first, with the energy per
    unit of work at the power limit; cards without a power figure or a speed, or that do
    not fit, are counted as left out."""
    rated = [
        (w, card, rate)
        for card, rate, fits in scored
        if fits and rate is not None and (w := per_watt(rate, card)) is not None
    ]
    rated.sort(key=lambda x: -x[0])
    if not rated:
        return []
    lines = [
        f"  per watt (the card's power limit, tdp_w; energy at that limit, an upper bound; "
        f"{len(scored) - len(rated)} cards without a power figure or speed, or not fitting, "
        "left out):"
    ]
    for i, (w, card, rate) in enumerate(rated[:top]):
        e = energy(rate, card, unit) or 0.0
        mark = MARK if card.is_third_party("tdp_w") else ""
        lines.append(
            f"    {i + 1:>2} {card.name:<{name_w}} {w:>8,.1f} {unit.word}/s per W "
            f"({card.tdp_w or 0:,.0f} W{mark}; {e:,.2f} {unit.energy_word} per {unit.amount_text})"
        )
    return lines
