"""The card ranking (`gputui fit --all-cards`) and the per-chip precision rules.

A missing figure once ranked a card as if it were slow (RTX A5000 below a T4, TITAN
RTX with no throughput at all), the P100 was told to train in fp32 although GP100 runs
FP16 at twice its FP32 rate, and `--precision amp_fp16` there used the FP32 rate.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from gputui.catalog import Architecture, Card, Catalog, load_catalog
from gputui.cli import main
from gputui.fit.core.peak_rate import rate
from gputui.fit.core.precision import offered, precision_options, recommend
from gputui.fit.core.ranking import Ranked, rank_cards
from gputui.fit.graph.estimate import PrecisionEstimate
from gputui.fit.graph.ranking import graph_row
from gputui.fit.importers.modelsfile import ModelSpec, load_models

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "models.toml"
# Cards whose rate for their recommended precision NVIDIA does not publish and no
# documented ratio gives (see their consistency_notes).
KNOWN_UNKNOWN = {
    "RTX PRO 6000 Blackwell Workstation Edition",
    "RTX PRO 6000 Blackwell Server Edition",
}
# Cards NVIDIA documents only by name and memory (no FP32 or tensor figure at all): the
# ranking can say whether a model fits, not place them by any rate, so they go last.
# (TITAN RTX's FP32-accumulate rate and the B300's rates are third-party figures now.)
NOTHING_KNOWN = {"H20 141 GB", "H800 80 GB"}
# Tensor rates published, FP32 not: the roofline needs FP32 for the ops tensor cores do
# not run, and an estimate by FLOPs alone must not be ranked among roofline estimates
# (it put the B100 above the B200), so it is unknown and goes last too. The H20's tensor
# rates are third-party figures; its FP32 is known to no source found.
NO_ROOFLINE = {"B100", "H20 96 GB"}


@pytest.fixture(scope="module")
def vgg16() -> ModelSpec:
    return next(m for m in load_models(EXAMPLES) if m.name == "vgg16")


@pytest.fixture(scope="module")
def ranking(vgg16: ModelSpec) -> list[Ranked[PrecisionEstimate]]:
    catalog = load_catalog()
    return rank_cards(catalog.cards, partial(graph_row, vgg16, dict(catalog.architectures)))


def test_no_card_is_unknown_where_a_figure_or_ratio_exists(
    ranking: list[Ranked[PrecisionEstimate]],
) -> None:
    unknown = {r.card.name for r in ranking if r.throughput is None}
    assert unknown == KNOWN_UNKNOWN | NOTHING_KNOWN | NO_ROOFLINE
    for r in ranking:
        if r.throughput is None:
            assert r.unknown_reason
            last = NOTHING_KNOWN | NO_ROOFLINE
            assert (r.floor is None) == (r.card.name in last), r.card.name
    (b100,) = [r for r in ranking if r.card.name == "B100"]
    assert b100.unknown_reason is not None and "FP32" in b100.unknown_reason


def test_cards_with_nothing_known_come_after_every_placed_card(
    ranking: list[Ranked[PrecisionEstimate]],
) -> None:
    """No rate at all is not a slow rate: such a card is neither first nor mixed in."""
    fitting = [r for r in ranking if r.estimate.fits]
    blind = [i for i, r in enumerate(fitting) if r.card.name in NOTHING_KNOWN | NO_ROOFLINE]
    placed = [i for i, r in enumerate(fitting) if r.throughput is not None or r.floor is not None]
    assert blind and placed and min(blind) > max(placed)
    for name in NOTHING_KNOWN:
        card = next(r.card for r in ranking if r.card.name == name)
        assert card.fp32_tflops is None and card.bf16_tensor_tflops is None
        assert "unknown" in (card.consistency_notes or "")


def test_speed_uses_the_recommended_precisions_own_figure(
    catalog: Catalog, ranking: list[Ranked[PrecisionEstimate]]
) -> None:
    """Never a slower precision's rate without saying so."""
    for r in ranking:
        speed = r.estimate.speed
        if speed is None or not speed.phases:
            continue
        arch = catalog.architectures[r.card.architecture]
        found = rate(r.card, arch, r.precision)
        assert speed.peak_tflops == found.tflops
        if r.precision in {"amp_bf16", "bf16"}:
            assert (
                speed.peak_basis == "bf16 tensor" and speed.peak_tflops == r.card.bf16_tensor_tflops
            )
        if r.precision == "amp_fp16" and r.card.fp16_tensor_tflops is not None:
            assert speed.peak_tflops == r.card.fp16_tensor_tflops


def test_formerly_misranked_cards_now_rank_by_their_figures(
    ranking: list[Ranked[PrecisionEstimate]],
) -> None:
    place = {r.card.name: i for i, r in enumerate(ranking)}
    assert place["GeForce RTX 3090 Ti"] < place["GeForce RTX 3090"] < place["GeForce RTX 3080"]
    assert place["RTX A5000"] < place["Tesla T4"] and place["RTX A4000"] < place["Tesla T4"]
    p100 = next(r for r in ranking if r.card.name == "Tesla P100 SXM2 16 GB")
    assert p100.precision == "amp_fp16"
    assert p100.estimate.speed is not None and p100.estimate.speed.peak_tflops == 21.2


def test_unknown_is_placed_by_what_is_known_not_as_zero(vgg16: ModelSpec) -> None:
    catalog = load_catalog()
    a6000 = catalog.find("RTX A6000")
    # The same card with its BF16 figure unknown still outranks a slower card that is
    # known (its FP32 rate, 38.7 TFLOPS, is a floor); ranked as zero it would come last.
    blind = a6000.model_copy(update={"name": "Blind A6000", "bf16_tensor_tflops": None})
    slow = catalog.find("GTX 1660 Ti")
    ranked = rank_cards((slow, blind), partial(graph_row, vgg16, dict(catalog.architectures)))
    assert [r.card.name for r in ranked] == ["Blind A6000", "GeForce GTX 1660 Ti"]
    assert ranked[0].throughput is None and ranked[0].unknown_reason
    assert ranked[0].floor is not None


def test_ranking_text_says_unknown_and_launch_price(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["fit", str(EXAMPLES), "--all-cards", "--model", "vgg16"]) == 0
    out = capsys.readouterr().out
    pro = next(line for line in out.splitlines() if " RTX PRO 6000 Blackwell Server " in line)
    assert "unknown" in pro
    assert "unknown: RTX PRO 6000 Blackwell Server Edition:" in out
    # a speed from a third party's figure is marked, and the note names the source
    titan = next(line for line in out.splitlines() if " TITAN RTX " in line)
    assert "unknown" not in titan and "^ " in titan
    assert "^ third-party figure: TITAN RTX: fp16_tensor_tflops (not NVIDIA's; from Tom's" in out
    assert "per launch dollar" in out and "launch price $" in out
    per_dollar = out.split("per launch dollar")[1].split("  per watt")[0]
    for name in ("Tesla T4", "A100 SXM4 80 GB", "H100 PCIe"):  # no published MSRP
        assert name not in per_dollar
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if "samples/s" in line)
    width = len(lines[header])
    rows = [line for line in lines[header + 1 :] if line[:5].strip().isdigit()]
    assert rows and all(len(line) <= width for line in rows)  # long names do not shift columns


def test_ranking_json_adds_basis_and_unknown_reason(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", str(EXAMPLES), "--all-cards", "--model", "vgg16", "--json"]) == 0
    cards = json.loads(capsys.readouterr().out)["models"][0]["ranking"]
    by_name = {c["card"]: c for c in cards}
    pro = by_name["RTX PRO 6000 Blackwell Server Edition"]
    assert pro["throughput"] is None and pro["speed_unknown_reason"]
    assert pro["throughput_floor"] > 0 and pro["third_party_figures"] == []
    assert by_name["TITAN RTX"]["throughput"] > 0
    assert by_name["TITAN RTX"]["third_party_figures"] == ["fp16_tensor_tflops"]
    assert "tdp_w" in by_name["H20 96 GB"]["third_party_figures"]
    assert by_name["GeForce RTX 3070"]["speed_figure_derived"] is True
    assert by_name["RTX A6000"]["speed_figure_derived"] is False
    assert by_name["RTX A6000"]["speed_basis"].startswith("bf16 tensor 154.8 TFLOPS")


# ---------------------------------------------------------------- precision rules per chip


def _card(name: str) -> tuple[Card, Architecture]:
    catalog = load_catalog()
    card = catalog.find(name)
    return card, catalog.architectures[card.architecture]


def test_gp100_offers_and_recommends_amp_fp16_gp102_does_not() -> None:
    p100, pascal = _card("Tesla P100 SXM2 16 GB")
    assert recommend(pascal, "train", p100)[0] == "amp_fp16"
    assert "amp_fp16" in offered(pascal, "train", p100)
    found = rate(p100, pascal, "amp_fp16")
    assert found.tflops == 21.2 and "CUDA cores" in found.basis
    gtx1080, _ = _card("GTX 1080")
    name, reason = recommend(pascal, "train", gtx1080)
    assert name == "fp32" and reason
    options = {o.name: o for o in precision_options(pascal, "train", gtx1080)}
    assert not options["amp_fp16"].offered and "1/64" in options["amp_fp16"].reason
    # --precision amp_fp16 on a GP104 runs at its FP32 rate, and says so
    slow = rate(gtx1080, pascal, "amp_fp16")
    assert slow.tflops == gtx1080.fp32_tflops and slow.basis.startswith("fp32 rate")


def test_tu116_has_no_tensor_cores_but_fast_fp16() -> None:
    gtx, turing = _card("GTX 1660 Ti")
    assert recommend(turing, "train", gtx)[0] == "amp_fp16"
    options = {o.name: o for o in precision_options(turing, "inference", gtx)}
    assert not options["int8"].offered and "no tensor cores" in options["int8"].reason
    assert options["fp16"].offered and "twice" in options["fp16"].reason
    assert rate(gtx, turing, "amp_fp16").tflops == gtx.fp16_tflops
    rtx, _ = _card("RTX 2070")
    assert "int8" in offered(turing, "inference", rtx)


@pytest.mark.parametrize("name", ["RTX 4090", "H100 SXM", "B200", "RTX 5080"])
def test_fp8_training_is_an_option_not_the_recommendation(name: str) -> None:
    card, arch = _card(name)
    chosen, reason = recommend(arch, "train", card)
    assert chosen == "amp_bf16" and "amp_fp8" in reason
    options = {o.name: o for o in precision_options(arch, "train", card)}
    assert options["amp_fp8"].offered and "Transformer Engine" in options["amp_fp8"].reason


@pytest.mark.parametrize("name", ["A100 SXM4 80GB", "RTX 3090", "Tesla T4", "Tesla V100-SXM2-16GB"])
def test_no_fp8_training_before_ada(name: str) -> None:
    card, arch = _card(name)
    options = {o.name: o for o in precision_options(arch, "train", card)}
    assert not options["amp_fp8"].offered
    assert "amp_fp8" not in recommend(arch, "train", card)[1]


def test_gpu_check_on_p100_recommends_amp_fp16(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", str(EXAMPLES), "--gpu", "P100 SXM2", "--model", "vgg16", "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["models"][0]["estimates"]
    assert entry["recommended_precision"] == "amp_fp16"
    amp = next(e for e in entry["precisions"] if e["precision"] == "amp_fp16")
    assert amp["speed"]["peak_tflops_used"] == 21.2
