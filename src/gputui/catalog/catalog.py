"""The loaded catalog: the cards, their architectures, and lookups by name.

A plain class rather than a pydantic model: it is built once from already
validated models and is only read afterwards.
"""

from __future__ import annotations

from pathlib import Path

from gputui.catalog import matcher
from gputui.catalog.models import Architecture, Card, MatchResult
from gputui.core.errors import UserError


class Catalog:
    """Cards in file order (architecture files sorted by name) and architectures by key."""

    __slots__ = ("architectures", "cards", "directory")

    def __init__(
        self,
        cards: tuple[Card, ...],
        architectures: dict[str, Architecture],
        directory: Path | None = None,
    ) -> None:
        self.cards = cards
        self.architectures = architectures
        self.directory = directory

    def __repr__(self) -> str:
        return f"Catalog({len(self.cards)} cards, {len(self.architectures)} architectures)"

    def architecture(self, key: str) -> Architecture:
        try:
            return self.architectures[key.lower()]
        except KeyError:
            known = ", ".join(self.architectures)
            raise UserError(f"unknown architecture {key!r} (known: {known})") from None

    def architecture_for_cc(self, cc: str) -> Architecture | None:
        return matcher.architecture_for_cc(self.architectures, cc)

    def cards_of(self, key: str) -> tuple[Card, ...]:
        arch = self.architecture(key)
        return tuple(c for c in self.cards if c.architecture == arch.key)

    def find(self, name: str) -> Card:
        """A card by catalog name, NVML name (case-insensitive) or a unique partial name.

        Typed by a person, so partial names are welcome ("RTX 3090", "A100 80GB SXM"),
        but an ambiguous one is an error listing the candidates rather than a guess.
        """
        wanted = " ".join(name.split()).casefold()
        by_name = [c for c in self.cards if c.name.casefold() == wanted]
        if by_name:
            return by_name[0]
        for found in (
            matcher.exact_alias(self.cards, name),
            matcher.name_candidates(self.cards, name),
            matcher.name_candidates(self.cards, name, partial=True),
        ):
            if len(found) == 1:
                return found[0]
            if len(found) > 1:
                listed = "; ".join(c.name for c in found)
                raise UserError(f"{name!r} could be any of: {listed}; give a fuller name")
        raise UserError(f"no card named {name!r} in the catalog (see `gputui catalog`)")

    def match(
        self, nvml_name: str, memory_mib: int | None = None, cc: str | None = None
    ) -> MatchResult:
        """What an installed GPU is: a card, only its architecture, ambiguous, or unknown."""
        return matcher.match_card(self.cards, self.architectures, nvml_name, memory_mib, cc)
