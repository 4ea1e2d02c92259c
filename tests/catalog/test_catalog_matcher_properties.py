"""Properties of the matcher over arbitrary input: it never crashes and never claims a card
whose name tokens differ from the query's."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gputui.catalog import load_catalog
from gputui.catalog.matcher import card_keys, name_key

CATALOG = load_catalog()
ALIASES = [(alias, card.name) for card in CATALOG.cards for alias in card.nvml_names]


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(max_size=40),
    memory=st.one_of(st.none(), st.integers(min_value=-10, max_value=300_000)),
    cc=st.one_of(st.none(), st.sampled_from(["6.1", "7.0", "8.6", "8.9", "9.0", "12.0", "x"])),
)
def test_arbitrary_input_never_crashes_and_claims_only_token_equal_cards(
    text: str, memory: int | None, cc: str | None
) -> None:
    result = CATALOG.match(text, memory, cc)
    assert result.status in {"card", "architecture", "ambiguous", "unknown"}
    if result.status == "card":
        assert result.card is not None
        exact = any(
            " ".join(text.split()).casefold() == a.casefold() for a in result.card.nvml_names
        )
        assert exact or name_key(text).model in {k.model for k in card_keys(result.card)}


@settings(max_examples=100, deadline=None)
@given(pair=st.sampled_from(ALIASES), data=st.data())
def test_case_and_spacing_of_an_alias_do_not_matter(
    pair: tuple[str, str], data: st.DataObject
) -> None:
    alias, name = pair
    card = CATALOG.find(name)
    mangled = "".join(data.draw(st.sampled_from([ch.upper(), ch.lower()])) for ch in alias).replace(
        " ", data.draw(st.sampled_from([" ", "  ", "\t"]))
    )
    result = CATALOG.match(mangled, int(card.memory_gib * 1024 * 0.96))
    assert result.card is not None and result.card.name == name
