"""Matching NVML names to catalog cards: every alias resolves, and the known traps never
resolve to the wrong card."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gputui.catalog import Card, Catalog, load_catalog
from gputui.catalog.matcher import name_key
from gputui.core.errors import UserError

from .conftest import GOOD_CARD


def _reported_mib(card: Card) -> int:
    # NVML reports a little less than the marketing size (reserved memory): use 97 %.
    return int(card.memory_gib * 1024 * 0.97)


def _all_aliases() -> list[tuple[str, str, int]]:
    return [
        (alias, card.name, _reported_mib(card))
        for card in load_catalog().cards
        for alias in card.nvml_names
    ]


@pytest.mark.parametrize(("alias", "name", "memory_mib"), _all_aliases())
def test_every_nvml_name_resolves_to_its_card(
    catalog: Catalog, alias: str, name: str, memory_mib: int
) -> None:
    card = catalog.find(name)
    result = catalog.match(alias, memory_mib, card.compute_capability)
    assert result.status == "card", result
    assert result.card is not None and result.card.name == name
    assert result.architecture is not None and result.architecture.key == card.architecture
    # the same without the compute capability
    bare = catalog.match(alias, memory_mib)
    assert bare.card is not None and bare.card.name == name


@pytest.mark.parametrize("card_name", [c.name for c in load_catalog().cards])
def test_every_catalog_name_is_found(catalog: Catalog, card_name: str) -> None:
    assert catalog.find(card_name).name == card_name
    assert catalog.find(card_name.upper()).name == card_name


def _match_name(
    catalog: Catalog, nvml: str, mib: int | None = None, cc: str | None = None
) -> str | None:
    result = catalog.match(nvml, mib, cc)
    return result.card.name if result.status == "card" and result.card else None


def test_a40_is_not_rtx_a4000(catalog: Catalog) -> None:
    assert _match_name(catalog, "NVIDIA A40", 46068) == "A40"
    assert _match_name(catalog, "NVIDIA RTX A4000", 16376) == "RTX A4000"
    assert _match_name(catalog, "A40") == "A40"


def test_l4_l40_l40s_are_distinct(catalog: Catalog) -> None:
    assert _match_name(catalog, "NVIDIA L4", 23034) == "L4"
    assert _match_name(catalog, "NVIDIA L40S", 46068) == "L40S"
    assert _match_name(catalog, "NVIDIA L40", 46068) == "L40"
    assert catalog.find("L4").name == "L4"
    assert catalog.find("L40").name == "L40"


def test_a10_is_not_a100(catalog: Catalog) -> None:
    assert _match_name(catalog, "NVIDIA A10", 23028) == "A10"
    assert _match_name(catalog, "NVIDIA A100-PCIE-40GB", 40536) == "A100 PCIe 40 GB"
    assert catalog.find("A10").name == "A10"


def test_a100_memory_and_form_factor(catalog: Catalog) -> None:
    assert _match_name(catalog, "NVIDIA A100-SXM4-40GB", 40960) == "A100 SXM4 40 GB"
    assert _match_name(catalog, "NVIDIA A100-SXM4-80GB", 81920) == "A100 SXM4 80 GB"
    assert _match_name(catalog, "NVIDIA A100 80GB PCIe", 81920) == "A100 PCIe 80 GB"
    # a name NVML never printed, normalised: vendor prefix, form factor and size as tokens
    assert _match_name(catalog, "NVIDIA A100 SXM4 80GB") == "A100 SXM4 80 GB"
    assert _match_name(catalog, "NVIDIA A100 PCIe", 40536) == "A100 PCIe 40 GB"
    ambiguous = catalog.match("NVIDIA A100")
    assert ambiguous.status == "ambiguous"
    assert len(ambiguous.candidates) == 4
    by_memory = catalog.match("NVIDIA A100", 81559)
    assert by_memory.status == "ambiguous"
    assert sorted(by_memory.candidates) == ["A100 PCIe 80 GB", "A100 SXM4 80 GB"]


def test_v100_16_and_32_under_one_name(catalog: Catalog) -> None:
    # older tools print the form factor without the size; memory decides
    assert _match_name(catalog, "Tesla V100-SXM2", 16160) == "Tesla V100 SXM2 16 GB"
    assert _match_name(catalog, "Tesla V100-SXM2", 32510) == "Tesla V100 SXM2 32 GB"
    unsized = catalog.match("Tesla V100-SXM2")
    assert unsized.status == "ambiguous"
    assert sorted(unsized.candidates) == ["Tesla V100 SXM2 16 GB", "Tesla V100 SXM2 32 GB"]


def test_rtx_3090_is_not_3090_ti(catalog: Catalog) -> None:
    assert _match_name(catalog, "NVIDIA GeForce RTX 3090", 24576) == "GeForce RTX 3090"
    assert _match_name(catalog, "NVIDIA GeForce RTX 3090 Ti", 24564) == "GeForce RTX 3090 Ti"
    assert _match_name(catalog, "GeForce RTX 3090 Ti") == "GeForce RTX 3090 Ti"
    assert catalog.find("RTX 3090").name == "GeForce RTX 3090"
    assert catalog.find("3090 ti").name == "GeForce RTX 3090 Ti"


def test_the_three_rtx_6000s(catalog: Catalog) -> None:
    assert (
        _match_name(catalog, "NVIDIA RTX 6000 Ada Generation", 49140) == "RTX 6000 Ada Generation"
    )
    assert _match_name(catalog, "Quadro RTX 6000", 24576) == "Quadro RTX 6000"
    assert _match_name(catalog, "NVIDIA RTX A6000", 49140) == "RTX A6000"
    assert catalog.find("RTX 6000 Ada").name == "RTX 6000 Ada Generation"
    assert catalog.find("A6000").name == "RTX A6000"


def test_h100_pcie_is_not_sxm(catalog: Catalog) -> None:
    assert _match_name(catalog, "NVIDIA H100 PCIe", 81559) == "H100 PCIe"
    assert _match_name(catalog, "NVIDIA H100 80GB HBM3", 81559) == "H100 SXM5 80GB"
    assert _match_name(catalog, "NVIDIA H100 NVL", 95830) == "H100 NVL"
    assert catalog.find("H100 SXM").name == "H100 SXM5 80GB"
    with pytest.raises(UserError, match="could be any of"):
        catalog.find("H100")


def test_unknown_card_with_known_cc_gives_the_architecture(catalog: Catalog) -> None:
    result = catalog.match("NVIDIA GeForce RTX 3050", 8192, "8.6")
    assert result.status == "architecture"
    assert result.card is None
    assert result.architecture is not None and result.architecture.key == "ampere"
    assert "bf16" in result.architecture.tensor_precisions


def test_unknown_without_cc_is_unknown(catalog: Catalog) -> None:
    result = catalog.match("NVIDIA GeForce RTX 3050", 8192)
    assert result.status == "unknown"
    assert result.card is None and result.architecture is None


def test_laptop_variant_is_not_the_desktop_card(catalog: Catalog) -> None:
    result = catalog.match("NVIDIA GeForce RTX 4090 Laptop GPU", 16376, "8.9")
    assert result.status == "architecture"
    assert result.architecture is not None and result.architecture.key == "ada"


def test_known_name_with_wrong_memory_is_not_claimed(catalog: Catalog) -> None:
    result = catalog.match("NVIDIA H100 PCIe", 96 * 1024 * 2)
    assert result.status == "architecture"
    assert result.card is None
    assert result.candidates == ["H100 PCIe"]


def test_cc_that_contradicts_the_name_is_not_claimed(catalog: Catalog) -> None:
    result = catalog.match("NVIDIA A10", 23028, "8.9")
    assert result.status == "architecture"
    assert result.architecture is not None and result.architecture.key == "ada"


def test_old_driver_names_without_prefix(catalog: Catalog) -> None:
    assert _match_name(catalog, "GeForce RTX 2080 Ti", 11264) == "GeForce RTX 2080 Ti"
    assert _match_name(catalog, "GeForce RTX 4090", 24564) == "GeForce RTX 4090"
    assert _match_name(catalog, "Tesla T4", 15360) == "Tesla T4"
    assert _match_name(catalog, "NVIDIA T4", 15360) == "Tesla T4"


def test_name_key_compares_tokens_not_substrings() -> None:
    assert name_key("NVIDIA A100-SXM4-80GB") == name_key("A100 SXM 80 GB")
    assert name_key("NVIDIA A10").model != name_key("NVIDIA A100").model
    key = name_key("Tesla V100-PCIE-32GB")
    assert key.model == frozenset({"V100"})
    assert key.form == "PCIE"
    assert key.memory_gb == 32
    assert name_key("NVIDIA H100 80GB HBM3").model == frozenset({"H100"})


def test_find_unknown_lists_nothing_and_says_so(catalog: Catalog) -> None:
    with pytest.raises(UserError, match="no card named 'Voodoo 5'"):
        catalog.find("Voodoo 5")


def test_one_nvml_name_on_two_cards_is_split_by_memory(
    scratch_catalog: Callable[[str], Path],
) -> None:
    small = GOOD_CARD.replace('"NVIDIA Test Card"', '"Tesla X100-PCIE"')
    big = small.replace('name = "Test Card"', 'name = "Test Card 48"').replace(
        "memory_gib = 24", "memory_gib = 48"
    )
    catalog = load_catalog(scratch_catalog(small + "\n" + big))
    assert _match_name(catalog, "Tesla X100-PCIE", 24 * 1024 - 300) == "Test Card"
    assert _match_name(catalog, "Tesla X100-PCIE", 48 * 1024 - 500) == "Test Card 48"
    unsized = catalog.match("Tesla X100-PCIE")
    assert unsized.status == "ambiguous"
    assert unsized.candidates == ["Test Card", "Test Card 48"]
    assert unsized.architecture is not None and unsized.architecture.key == "ampere"
    # 36 GB is neither: not claimed, but the architecture is still known from the name
    between = catalog.match("Tesla X100-PCIE", 36 * 1024)
    assert between.status == "architecture" and between.card is None
    with pytest.raises(UserError, match="could be any of"):
        catalog.find("Tesla X100-PCIE")
