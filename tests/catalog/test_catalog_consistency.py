"""Internal consistency of every card's figures.

Vendor figures are derived from a few hardware facts (cores, clock, bus width, data rate,
per-architecture tensor rates), so a typo or a sparse figure copied as dense shows up as a
ratio that is off. A legitimate disagreement must be explained in `consistency_notes`.
"""

from __future__ import annotations

import pytest

from gputui.catalog import Card, Catalog, load_catalog

TOLERANCE = 0.03
CARDS = load_catalog().cards
IDS = [c.name for c in CARDS]
# Architectures whose tensor cores run BF16 at the FP16 rate and TF32 at half of it.
BF16_TF32_ARCHS = {"ampere", "ada", "hopper", "blackwell"}


def _close(actual: float, expected: float) -> bool:
    return abs(actual - expected) <= TOLERANCE * abs(expected)


def _explained(card: Card, *words: str) -> bool:
    notes = (card.consistency_notes or "").lower()
    return any(word.lower() in notes for word in words)


def _check(card: Card, actual: float, expected: float, what: str, *words: str) -> None:
    if _close(actual, expected) or _explained(card, *words):
        return
    pytest.fail(
        f"{card.name}: {what}: {actual} vs expected {expected:.2f} "
        f"(off by {100 * (actual / expected - 1):+.1f} %), and consistency_notes does not explain it"
    )


@pytest.mark.parametrize("card", CARDS, ids=IDS)
def test_fp32_matches_cores_times_clock(card: Card) -> None:
    if card.cuda_cores is None or card.boost_clock_mhz is None or card.fp32_tflops is None:
        pytest.skip("cores, clock or FP32 figure not given")
    expected = 2 * card.cuda_cores * card.boost_clock_mhz / 1e6
    _check(
        card, card.fp32_tflops, expected, "fp32_tflops vs 2 x cores x boost clock", "fp32", "clock"
    )


@pytest.mark.parametrize("card", CARDS, ids=IDS)
def test_bandwidth_matches_bus_times_data_rate(card: Card) -> None:
    if (
        card.memory_bus_width_bits is None
        or card.memory_data_rate_gbps is None
        or card.memory_bandwidth_gbs is None
    ):
        pytest.skip("bus width, data rate or bandwidth not given")
    expected = card.memory_bus_width_bits * card.memory_data_rate_gbps / 8
    _check(
        card,
        card.memory_bandwidth_gbs,
        expected,
        "bandwidth vs bus x rate / 8",
        "bandwidth",
        "data rate",
    )


@pytest.mark.parametrize("card", CARDS, ids=IDS)
def test_tensor_precision_ratios(card: Card) -> None:
    fp16 = card.fp16_tensor_tflops
    if fp16 is None:
        assert card.bf16_tensor_tflops is None and card.tf32_tensor_tflops is None, (
            f"{card.name}: BF16/TF32 figures without an FP16 one"
        )
        return
    # Absent figures stay absent (not every datasheet prints BF16/TF32); present ones must fit.
    if card.architecture in BF16_TF32_ARCHS:
        if card.bf16_tensor_tflops is not None:
            _check(card, card.bf16_tensor_tflops, fp16, "bf16 == fp16", "bf16")
        if card.tf32_tensor_tflops is not None:
            _check(card, card.tf32_tensor_tflops, fp16 / 2, "tf32 == fp16 / 2", "tf32")
    # INT8 runs at twice the full FP16 rate; GeForce halves only FP32-accumulate FP16.
    full_rate_fp16 = card.fp16_acc16_tensor_tflops or fp16
    if card.int8_tensor_tops is not None:
        _check(card, card.int8_tensor_tops, 2 * full_rate_fp16, "int8 == 2 x fp16", "int8")
    if card.fp8_tensor_tflops is not None:
        _check(card, card.fp8_tensor_tflops, 2 * fp16, "fp8 == 2 x fp16 (FP32 accumulate)", "fp8")
    if card.fp16_acc16_tensor_tflops is not None:
        assert card.fp16_acc16_tensor_tflops > fp16, (
            f"{card.name}: fp16_acc16_tensor_tflops is only for a faster FP16-accumulate rate"
        )


@pytest.mark.parametrize("card", CARDS, ids=IDS)
def test_figures_match_what_the_architecture_accelerates(catalog: Catalog, card: Card) -> None:
    arch = catalog.architecture(card.architecture)
    precisions = set(arch.tensor_precisions)
    for precision in ("fp16", "bf16", "tf32", "int8", "fp8"):
        if card.tensor_tflops(precision) is not None:
            assert precision in precisions, (
                f"{card.name}: has a {precision} tensor figure but {arch.name} tensor cores "
                f"do not accelerate {precision}"
            )
    if arch.tensor_core_generation is None:
        assert card.tensor_cores is None


@pytest.mark.parametrize("card", CARDS, ids=IDS)
def test_basic_sanity(card: Card) -> None:
    assert card.source.strip(), f"{card.name}: every card names its vendor source"
    assert card.nvml_names, f"{card.name}: no NVML name"
    assert card.memory_gib > 0
    major, minor = card.compute_capability.split(".")
    assert major.isdigit() and minor.isdigit()
    for figure in ("fp32_tflops", "fp16_tensor_tflops", "memory_bandwidth_gbs", "tdp_w"):
        value = getattr(card, figure)
        assert value is None or value > 0, f"{card.name}: {figure} must be absent, not {value}"
    if card.tensor_cores is not None and card.sm_count is not None:
        assert card.tensor_cores % card.sm_count == 0
    if card.launch_year is not None:
        assert 2016 <= card.launch_year <= 2026


def test_check_catches_a_sparse_figure_copied_as_dense() -> None:
    """The ratio check must fail for the classic mistake, unless a note explains it."""
    good = load_catalog().find("H100 SXM")
    bad = good.model_copy(update={"fp16_tensor_tflops": 1978.9, "consistency_notes": None})
    with pytest.raises(pytest.fail.Exception):
        test_tensor_precision_ratios(bad)
    explained = bad.model_copy(update={"consistency_notes": "bf16 and tf32 are ..."})
    with pytest.raises(pytest.fail.Exception):  # the INT8 ratio is still unexplained
        test_tensor_precision_ratios(explained)
