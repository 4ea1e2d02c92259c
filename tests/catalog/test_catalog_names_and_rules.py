"""Every card's NVML names find that card and no other; derived figures follow their rule.

The substring traps (A40 / A4000, L4 / L40 / L40S, A10 / A100 / A10G, H20 / H200, 3080 / 3080 Ti,
4070 / 4070 Ti / 4070 Ti SUPER, 4060 Ti 8 / 16 GB) are checked explicitly as well, since a
matcher that compared substrings would still pass a test that only used exact aliases.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gputui.catalog import Card, Catalog, load_catalog

CARDS = load_catalog().cards
NAMED = [(card, alias) for card in CARDS for alias in card.nvml_names]


def _reported_mib(card: Card) -> int:
    """What NVML would report: a little under the marketing size (reserved memory, ECC)."""
    return int(card.memory_gib * 1024 * 0.97)


@pytest.mark.parametrize(("card", "alias"), NAMED, ids=[f"{c.name}|{a}" for c, a in NAMED])
def test_nvml_name_matches_its_card_and_no_other(catalog: Catalog, card: Card, alias: str) -> None:
    result = catalog.match(alias, _reported_mib(card), card.compute_capability)
    assert result.status == "card", (alias, result)
    assert result.card is not None and result.card.name == card.name
    # Without the compute capability too: the name and memory alone decide.
    alone = catalog.match(alias, _reported_mib(card))
    assert alone.card is not None and alone.card.name == card.name


def test_shared_nvml_names_are_told_apart_by_memory(catalog: Catalog) -> None:
    by_alias: dict[str, list[Card]] = {}
    for card, alias in NAMED:
        by_alias.setdefault(alias.casefold(), []).append(card)
    shared = {a: cs for a, cs in by_alias.items() if len(cs) > 1}
    assert shared, "the catalog has memory variants sharing a name (3080, 4060 Ti, A2000)"
    for cards in shared.values():
        sizes = [c.memory_gib for c in cards]
        assert len(set(sizes)) == len(sizes)


TRAPS: list[tuple[str, int, str | None]] = [
    ("NVIDIA A40", 46068, "A40"),
    ("NVIDIA RTX A4000", 16376, "RTX A4000"),
    ("NVIDIA L4", 23034, "L4"),
    ("NVIDIA L40", 46068, "L40"),
    ("NVIDIA L40S", 46068, "L40S"),
    ("NVIDIA A10", 23028, "A10"),
    ("NVIDIA A10G", 23028, None),  # AWS's A10G is not in the catalog: never the A10 or A100
    ("NVIDIA A100-SXM4-40GB", 40960, "A100 SXM4 40 GB"),
    ("NVIDIA A2", 15356, "A2"),
    ("NVIDIA RTX A2000", 6138, "RTX A2000"),
    ("NVIDIA RTX A2000", 12282, "RTX A2000 12GB"),
    ("NVIDIA RTX A2000 12GB", 12282, "RTX A2000 12GB"),
    ("NVIDIA GeForce RTX 3080", 10240, "GeForce RTX 3080"),
    ("NVIDIA GeForce RTX 3080", 12288, "GeForce RTX 3080 12 GB"),
    ("NVIDIA GeForce RTX 3080 Ti", 12288, "GeForce RTX 3080 Ti"),
    ("NVIDIA GeForce RTX 4070", 12282, "GeForce RTX 4070"),
    ("NVIDIA GeForce RTX 4070 Ti", 12282, "GeForce RTX 4070 Ti"),
    ("NVIDIA GeForce RTX 4070 SUPER", 12282, "GeForce RTX 4070 SUPER"),
    ("NVIDIA GeForce RTX 4070 Ti SUPER", 16376, "GeForce RTX 4070 Ti SUPER"),
    ("NVIDIA GeForce RTX 4060 Ti", 8188, "GeForce RTX 4060 Ti 8 GB"),
    ("NVIDIA GeForce RTX 4060 Ti", 16380, "GeForce RTX 4060 Ti 16 GB"),
    ("NVIDIA GeForce RTX 4060 Ti", 12288, None),  # neither size: not a guess
    ("NVIDIA GeForce RTX 4080", 16376, "GeForce RTX 4080"),
    ("NVIDIA GeForce RTX 4080 SUPER", 16376, "GeForce RTX 4080 SUPER"),
    ("NVIDIA GeForce GTX 1660", 6144, "GeForce GTX 1660"),
    ("NVIDIA GeForce GTX 1660 Ti", 6144, "GeForce GTX 1660 Ti"),
    ("NVIDIA GeForce GTX 1660 SUPER", 6144, "GeForce GTX 1660 SUPER"),
    ("NVIDIA GeForce GTX 1080", 8192, "GeForce GTX 1080"),
    ("NVIDIA GeForce GTX 1080 Ti", 11264, "GeForce GTX 1080 Ti"),
    ("NVIDIA H200", 143771, "H200 SXM 141GB"),
    ("NVIDIA H200 NVL", 143771, "H200 NVL"),
    ("NVIDIA H20", 97871, "H20 96 GB"),  # H20 / H200: tokens, not substrings
    ("NVIDIA H20-3e", 143771, "H20 141 GB"),
    ("NVIDIA H800", 81559, "H800 80 GB"),
    (
        "NVIDIA H800 PCIe",
        81559,
        None,
    ),  # PCIe part not in the catalog: no memory in NVIDIA's documents
    ("NVIDIA H20", 143771, None),  # the 96 GB card's name at 141 GB: neither card, no guess
    ("NVIDIA H200", 97871, None),
    ("NVIDIA B300 SXM6 AC", 275040, "B300"),
    ("NVIDIA B200", 275040, None),  # B200 / B300 told apart by name, and memory checked
    ("NVIDIA B300 SXM6 AC", 184320, None),
    ("NVIDIA GH200 480GB", 97871, "GH200 96 GB"),
    ("NVIDIA GH200 144G HBM3e", 145920, "GH200 144 GB"),
    (
        "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
        97887,
        "RTX PRO 6000 Blackwell Workstation Edition",
    ),
    (
        "NVIDIA RTX PRO 6000 Blackwell Server Edition",
        97887,
        "RTX PRO 6000 Blackwell Server Edition",
    ),
    ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", 97887, None),
    ("NVIDIA RTX 4000 Ada Generation", 20475, "RTX 4000 Ada Generation"),
    ("NVIDIA RTX 4000 SFF Ada Generation", 20475, None),
]


@pytest.mark.parametrize(("nvml_name", "mib", "expected"), TRAPS)
def test_substring_traps(catalog: Catalog, nvml_name: str, mib: int, expected: str | None) -> None:
    result = catalog.match(nvml_name, mib)
    got = result.card.name if result.card is not None else None
    assert got == expected, (nvml_name, mib, result.status, result.candidates)


# ---------------------------------------------------------------- derived figures

Rule = Callable[[Card], float]


def _fp32(c: Card) -> float:
    assert c.cuda_cores is not None and c.boost_clock_mhz is not None
    return 2 * c.cuda_cores * c.boost_clock_mhz / 1e6


def _v(c: Card, field: str) -> float:
    value = getattr(c, field)
    assert value is not None, f"{c.name}: the rule needs {field}"
    return float(value)


def _rules(card: Card) -> dict[str, Rule]:
    """The architecture rule for each derivable figure of this kind of card.

    Written independently of the catalog data: each ratio is the one the cited
    whitepaper column shows (see the card's derived_rule).
    """
    geforce = card.segment == "consumer"
    rules: dict[str, Rule] = {
        "fp32_tflops": _fp32,
        "memory_data_rate_gbps": lambda c: (
            _v(c, "memory_bandwidth_gbs") * 8 / _v(c, "memory_bus_width_bits")
        ),
    }
    arch = card.architecture
    if arch == "volta":  # V100 whitepaper: 125 tensor (FP32 accumulate) : 15.7 FP32
        rules["fp32_tflops"] = lambda c: _v(c, "fp16_tensor_tflops") / 8
    if arch == "ampere" and card.compute_capability == "8.6":  # GA10x: 128 FP32 lanes per SM
        rules["sm_count"] = lambda c: _v(c, "cuda_cores") / 128
    if arch == "turing" and card.chip in {"TU116", "TU117"}:
        rules["fp16_tflops"] = lambda c: 2 * _v(c, "fp32_tflops")
    elif arch == "turing" and geforce:  # 2080 Ti column: 13.4 : 53.8 : 107.6 : 215.2
        rules["fp16_tensor_tflops"] = lambda c: 4 * _v(c, "fp32_tflops")
        rules["fp16_acc16_tensor_tflops"] = lambda c: 8 * _v(c, "fp32_tflops")
        rules["int8_tensor_tops"] = lambda c: 16 * _v(c, "fp32_tflops")
    elif arch == "ampere" and geforce:  # RTX 3080/3090 columns
        rules["fp16_tensor_tflops"] = lambda c: 2 * _v(c, "fp32_tflops")
        rules["bf16_tensor_tflops"] = lambda c: 2 * _v(c, "fp32_tflops")
        rules["fp16_acc16_tensor_tflops"] = lambda c: 4 * _v(c, "fp32_tflops")
        rules["tf32_tensor_tflops"] = lambda c: _v(c, "fp32_tflops")
        rules["int8_tensor_tops"] = lambda c: 8 * _v(c, "fp32_tflops")
    elif arch == "ampere":  # RTX A6000 column / A100 datasheet: full-rate FP32 accumulate
        rules["bf16_tensor_tflops"] = lambda c: _v(c, "fp16_tensor_tflops")
        rules["tf32_tensor_tflops"] = lambda c: _v(c, "fp16_tensor_tflops") / 2
        rules["int8_tensor_tops"] = lambda c: 2 * _v(c, "fp16_tensor_tflops")
    elif arch in {"ada", "blackwell"} and geforce:  # RTX 4090 / 5090 columns
        # Tied to the clock as well as to each other, so a wrong AI TOPS figure shows.
        rules["fp16_tensor_tflops"] = lambda c: 2 * _fp32(c)
        rules["bf16_tensor_tflops"] = lambda c: 2 * _fp32(c)
        rules["fp16_acc16_tensor_tflops"] = lambda c: 4 * _fp32(c)
        rules["fp8_tensor_tflops"] = lambda c: 4 * _fp32(c)
        rules["tf32_tensor_tflops"] = lambda c: _fp32(c)
        rules["int8_tensor_tops"] = lambda c: 8 * _fp32(c)
    elif arch == "ada":  # RTX 6000 Ada column: FP8 = INT8 = 2 x FP16 = 2 x BF16 = 4 x TF32
        rules["int8_tensor_tops"] = lambda c: _v(c, "fp8_tensor_tflops")
        rules["fp16_tensor_tflops"] = lambda c: _v(c, "fp8_tensor_tflops") / 2
        rules["bf16_tensor_tflops"] = lambda c: _v(c, "fp8_tensor_tflops") / 2
        rules["tf32_tensor_tflops"] = lambda c: _v(c, "fp8_tensor_tflops") / 4
        rules["fp8_tensor_tflops"] = lambda c: _v(c, "int8_tensor_tops")
    elif arch == "blackwell":  # FP4 = 2 x FP8 = 2 x INT8; FP16-acc = INT8 / 2
        rules["fp16_acc16_tensor_tflops"] = lambda c: _v(c, "int8_tensor_tops") / 2
        rules["int8_tensor_tops"] = lambda c: 2 * _v(c, "fp16_acc16_tensor_tflops")
    return rules


DERIVED = [(c, f) for c in CARDS for f in c.derived]


@pytest.mark.parametrize(("card", "field"), DERIVED, ids=[f"{c.name}|{f}" for c, f in DERIVED])
def test_derived_figure_follows_its_rule(card: Card, field: str) -> None:
    rules = _rules(card)
    assert field in rules, f"{card.name}: {field} is marked derived but no rule covers it"
    expected = rules[field](card)
    actual = float(getattr(card, field))
    assert abs(actual - expected) <= 0.015 * expected, (
        f"{card.name}: derived {field} = {actual}, its rule gives {expected:.2f}"
    )
    assert card.derived_rule and "\n" not in card.derived_rule


def test_the_rule_test_catches_a_wrong_derived_figure() -> None:
    card = load_catalog().find("RTX 3070")
    assert "bf16_tensor_tflops" in card.derived
    bad = card.model_copy(update={"bf16_tensor_tflops": card.bf16_tensor_tflops * 2})  # type: ignore[operator]
    with pytest.raises(AssertionError):
        test_derived_figure_follows_its_rule(bad, "bf16_tensor_tflops")


def test_every_card_has_what_the_ranking_needs_or_says_why(catalog: Catalog) -> None:
    """FP32 everywhere; FP16-with-FP32-accumulate wherever tensor cores exist, unless noted."""
    for card in catalog.cards:
        assert card.memory_gib > 0 and card.source
        arch = catalog.architecture(card.architecture)
        if card.fp32_tflops is None:
            assert card.consistency_notes and "fp32" in card.consistency_notes.lower(), card.name
        if arch.tensor_precisions and card.chip not in {"TU116", "TU117"}:
            if card.fp16_tensor_tflops is None:
                notes = (card.consistency_notes or "").lower()
                assert "unknown" in notes or "left out" in notes, card.name
            if "bf16" in arch.tensor_precisions and card.fp16_tensor_tflops is not None:
                assert card.bf16_tensor_tflops is not None, f"{card.name}: BF16 missing"
