"""Third-party catalog figures: a figure NVIDIA does not publish may
come from a named third party, marked so, and the ranking says so beside the card."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gputui.catalog import load_catalog
from gputui.cli import main
from gputui.fit.core import power
from gputui.tui.views.catalog_compare import card_cells, figure, per_watt

from .conftest import GOOD_CARD

Capsys = pytest.CaptureFixture[str]
MakeCatalog = Callable[..., Path]
SOURCE = 'third_party_source = "a review"\n'


@pytest.mark.parametrize(
    ("extra", "field", "says"),
    [
        ('third_party = ["fp32_tflops"]\nfp32_tflops = 10\n', "third_party_source", "name who"),
        (SOURCE, "third_party", "list the fields"),
        ('third_party = ["fp32_tflops"]\n' + SOURCE, "third_party", "has no value"),
        (
            'third_party = ["fp32_tflops"]\nfp32_tflops = 10\nderived = ["fp32_tflops"]\n'
            'derived_rule = "x"\n' + SOURCE,
            "third_party",
            "also listed as derived",
        ),
        ('third_party = ["name"]\n' + SOURCE, "third_party", "Input should be"),
    ],
)
def test_a_third_party_figure_needs_its_source_and_a_value(
    capsys: Capsys, scratch_catalog: MakeCatalog, extra: str, field: str, says: str
) -> None:
    root = scratch_catalog(GOOD_CARD + extra)
    assert main(["catalog", "--catalog-dir", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f'card "Test Card": {field}:' in err and says in err


def test_every_third_party_figure_names_its_source() -> None:
    cards = [c for c in load_catalog().cards if c.third_party]
    assert {c.name for c in cards} >= {"TITAN RTX", "B300", "H20 96 GB"}
    for card in cards:
        assert card.third_party_source and "NVIDIA" not in card.third_party_source.split()[0]
        for field in card.third_party:
            assert getattr(card, field) is not None and not card.is_derived(field)


def test_catalog_show_and_list_mark_third_party_figures(capsys: Capsys) -> None:
    assert main(["catalog", "show", "H20 96 GB"]) == 0
    out = capsys.readouterr().out
    assert "4000  (third-party)" in out.replace(",", "")
    assert "Third-party:" in out and "from: Tom's Hardware" in out
    assert main(["catalog", "list"]) == 0
    out = capsys.readouterr().out
    assert "^ a third-party figure" in out
    h20 = next(line for line in out.splitlines() if line.startswith("H20 96 GB"))
    assert "148^" in h20 and "400^" in h20


def test_per_watt_marks_a_third_party_power_limit() -> None:
    """The H20's 400 W is a third-party figure: the per-watt line says so, the H100's not."""
    catalog = load_catalog()
    h20, h100 = catalog.find("H20 96 GB"), catalog.find("H100 SXM5 80GB")
    lines = power.ranking_lines([(h20, 1000.0, True), (h100, 1000.0, True)], power.SAMPLES, 20, 5)
    (h20_line,) = [line for line in lines if "H20 96 GB" in line]
    (h100_line,) = [line for line in lines if "H100 SXM5" in line]
    assert "(400 W^;" in h20_line and "(700 W;" in h100_line
    assert power.json_fields(1000.0, h20, power.SAMPLES)["third_party_figures"] == list(
        h20.third_party
    )


def test_ranking_notes_a_card_whose_speed_is_still_unknown(capsys: Capsys) -> None:
    """The H20 has third-party rates but no FP32 figure anywhere: unknown, and noted."""
    examples = Path(__file__).resolve().parents[2] / "examples" / "models.toml"
    assert main(["fit", str(examples), "--model", "mnist-cnn", "--all-cards"]) == 0
    out = capsys.readouterr().out
    h20 = next(line for line in out.splitlines() if " H20 96 GB " in line)
    assert "unknown" in h20
    assert "^ third-party figure: H20 96 GB: memory_bandwidth_gbs" in out
    assert "unknown: H20 96 GB: no FP32 (CUDA-core) figure" in out


def test_catalog_screen_cells_mark_third_party_figures() -> None:
    catalog = load_catalog()
    h20, h100 = catalog.find("H20 96 GB"), catalog.find("H100 SXM5 80GB")
    assert figure(h20, "bf16_tensor_tflops") == "148^" and figure(h20, "tdp_w") == "400^"
    assert per_watt(h20) == "0.37^"  # 148 TFLOPS / 400 W, both third-party
    assert not figure(h100, "bf16_tensor_tflops").endswith("^") and "^" not in per_watt(h100)
    cells = [str(c) for c in card_cells(h20, catalog, set())]
    assert "148^" in cells and "400^" in cells
