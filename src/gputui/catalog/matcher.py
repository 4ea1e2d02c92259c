"""Decide which catalog card an installed GPU is, without ever guessing wrong with confidence.

NVML names are close to marketing names but not equal to them ("Tesla V100-PCIE-16GB",
"NVIDIA A100 80GB PCIe"), older drivers drop the "NVIDIA " prefix, and several cards
share one name across memory sizes. Names are compared as token sets, never as
substrings, so "A10" never matches "A100" and "L4" never matches "L40S".
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gputui.catalog.models import Architecture, Card, MatchResult

# Words that say who sells the card, not which card it is.
NOISE_TOKENS = frozenset({"NVIDIA", "GEFORCE", "TESLA", "QUADRO", "GENERATION"})
# Memory technology words: the size and the model already say which card it is.
MEMORY_TYPE = re.compile(r"^(HBM\d*E?|GDDR\d+X?)$")
_MEMORY_SIZE = re.compile(r"(?<![A-Z0-9.])(\d+(?:\.\d+)?)\s*(?:GB|GIB|G)(?![A-Z0-9])")
_TOKEN = re.compile(r"[A-Z0-9]+")

# NVML reports a little less than the marketing size (reserved memory, ECC), up to
# ~6.5 % less with ECC on GDDR (L4: 23034 MiB of "24 GB"; T4: 15360 MiB of "16 GB").
MEMORY_LOW_TOLERANCE = 0.88
MEMORY_HIGH_TOLERANCE = 1.03


@dataclass(frozen=True, slots=True)
class NameKey:
    """A name split into what identifies the model, its form factor and a stated memory size."""

    model: frozenset[str]
    form: str | None
    memory_gb: float | None


def _form_of(token: str) -> str | None:
    if token in {"PCIE", "PCI"}:
        return "PCIE"
    if re.fullmatch(r"SXM\d?", token):
        return "SXM"
    if token == "NVL":
        return "NVL"
    return None


def name_key(name: str) -> NameKey:
    """Normalise a catalog, NVML or user-typed name into comparable tokens."""
    text = name.upper()
    memory: float | None = None
    found = _MEMORY_SIZE.search(text)
    if found:
        memory = float(found.group(1))
        text = text[: found.start()] + " " + text[found.end() :]
    model: set[str] = set()
    form: str | None = None
    for token in _TOKEN.findall(text):
        if token in NOISE_TOKENS or MEMORY_TYPE.match(token):
            continue
        token_form = _form_of(token)
        if token_form is not None:
            form = token_form
            continue
        model.add(token)
    return NameKey(frozenset(model), form, memory)


def card_keys(card: Card) -> list[NameKey]:
    return [name_key(n) for n in (card.name, *card.nvml_names)]


def card_forms(card: Card) -> set[str]:
    return {k.form for k in card_keys(card) if k.form is not None}


def memory_fits(nominal_gib: float, reported_mib: float) -> bool:
    ratio = reported_mib / (nominal_gib * 1024)
    return MEMORY_LOW_TOLERANCE <= ratio <= MEMORY_HIGH_TOLERANCE


def _memory_distance(card: Card, reported_mib: float) -> float:
    return abs(math.log(reported_mib / (card.memory_gib * 1024)))


def _stated_memory_fits(card: Card, stated_gb: float) -> bool:
    return abs(card.memory_gib - stated_gb) <= max(1.0, 0.05 * stated_gb)


def name_candidates(cards: Iterable[Card], query: str, *, partial: bool = False) -> list[Card]:
    """Cards whose model tokens equal the query's (or contain them, when `partial`).

    A form factor or memory size written in the query must agree with the card's.
    """
    key = name_key(query)
    if not key.model:
        return []
    found: list[Card] = []
    for card in cards:
        keys = card_keys(card)
        if partial:
            hit = any(key.model <= k.model for k in keys)
        else:
            hit = any(key.model == k.model for k in keys)
        if not hit:
            continue
        if key.form is not None and key.form not in card_forms(card):
            continue
        if key.memory_gb is not None and not _stated_memory_fits(card, key.memory_gb):
            continue
        found.append(card)
    return found


def exact_alias(cards: Iterable[Card], name: str) -> list[Card]:
    wanted = " ".join(name.split()).casefold()
    return [
        card
        for card in cards
        if any(" ".join(alias.split()).casefold() == wanted for alias in card.nvml_names)
    ]


def _by_memory(cards: Sequence[Card], memory_mib: int | None) -> list[Card]:
    """The nearest card by memory among those within tolerance; all of them if unknown."""
    if memory_mib is None or memory_mib <= 0:
        return list(cards)
    fitting = [c for c in cards if memory_fits(c.memory_gib, memory_mib)]
    if len(fitting) <= 1:
        return fitting
    fitting.sort(key=lambda c: _memory_distance(c, memory_mib))
    best = _memory_distance(fitting[0], memory_mib)
    return [c for c in fitting if math.isclose(_memory_distance(c, memory_mib), best)]


def match_card(
    cards: Sequence[Card],
    architectures: dict[str, Architecture],
    nvml_name: str,
    memory_mib: int | None = None,
    cc: str | None = None,
) -> MatchResult:
    """Match an installed GPU: exact NVML alias, then normalised name, then its architecture."""
    arch_for_cc = _architecture_for_cc(architectures, cc)
    named = exact_alias(cards, nvml_name) or name_candidates(cards, nvml_name)
    if cc is not None and arch_for_cc is not None:
        named = [c for c in named if c.compute_capability == cc]
    chosen = _by_memory(named, memory_mib)
    if len(chosen) == 1:
        card = chosen[0]
        return MatchResult(
            status="card", card=card, architecture=architectures.get(card.architecture)
        )
    if len(chosen) > 1:
        archs = {c.architecture for c in chosen}
        shared = architectures.get(archs.pop()) if len(archs) == 1 else None
        return MatchResult(
            status="ambiguous",
            architecture=shared or arch_for_cc,
            candidates=[c.name for c in chosen],
        )
    # The name is not in the catalog, or it is but with another memory size.
    candidates = [c.name for c in named]
    if arch_for_cc is None and named:
        archs = {c.architecture for c in named}
        if len(archs) == 1:
            arch_for_cc = architectures.get(archs.pop())
    if arch_for_cc is not None:
        return MatchResult(status="architecture", architecture=arch_for_cc, candidates=candidates)
    return MatchResult(status="unknown", candidates=candidates)


def _architecture_for_cc(
    architectures: dict[str, Architecture], cc: str | None
) -> Architecture | None:
    if not cc:
        return None
    wanted = cc.strip()
    for arch in architectures.values():
        if wanted in arch.compute_capabilities:
            return arch
    return None


def architecture_for_cc(
    architectures: dict[str, Architecture], cc: str | None
) -> Architecture | None:
    return _architecture_for_cc(architectures, cc)
