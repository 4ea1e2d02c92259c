"""Derived figures are shown as such, and `catalog compare` stays readable at 80 columns."""

from __future__ import annotations

import json

import pytest

from gputui.catalog import load_catalog
from gputui.catalog.present import compare, fmt
from gputui.cli import main
from gputui.commands.catalog import compare_table

Capsys = pytest.CaptureFixture[str]
REPORTED_CARDS = ["RTX 4070 Ti SUPER", "RTX 3090", "RTX 4090"]


def test_compare_fits_80_columns_and_cuts_no_number(
    capsys: Capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["catalog", "compare", *REPORTED_CARDS]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    catalog = load_catalog()
    cards = [catalog.find(n) for n in REPORTED_CARDS]
    for row in compare(cards):
        for value in row.values:
            if value is not None:
                assert fmt(value) in out, (row.field, value)
    assert "x1.50" in out  # 1008 / 672 GB/s, the bandwidth the panel used to cut to "10"
    for word in ("4070", "SUPER", "3090", "4090"):
        assert word in out
    assert "* derived" in out  # the 4070 Ti SUPER's tensor rates come from AI TOPS


@pytest.mark.parametrize("width", [60, 80, 120])
def test_compare_table_never_exceeds_the_width_or_drops_a_value(width: int) -> None:
    catalog = load_catalog()
    cards = [catalog.find(n) for n in ["RTX 4070 Ti SUPER", "RTX 3090 Ti", "RTX 4090", "H100 SXM"]]
    text = compare_table(cards, width)
    table = text.split("\n\nRatios to the first card:")[0]
    assert max(len(line) for line in table.splitlines()) <= width
    for row in compare(cards):
        for value in row.values:
            if value is not None:
                assert fmt(value) in table


def test_show_marks_derived_figures_and_prints_the_rule(capsys: Capsys) -> None:
    assert main(["catalog", "show", "RTX", "3070"]) == 0
    out = capsys.readouterr().out
    bf16 = next(line for line in out.splitlines() if line.startswith("BF16 tensor"))
    assert bf16.rstrip().endswith("(derived)")
    memory = next(line for line in out.splitlines() if line.startswith("Memory (GiB)"))
    assert "(derived)" not in memory
    assert "by the rule: FP32 = 2 x CUDA cores x boost clock" in out


def test_json_lists_derived_fields_and_their_rule(capsys: Capsys) -> None:
    assert main(["catalog", "show", "RTX 3070", "--json"]) == 0
    card = json.loads(capsys.readouterr().out)["card"]
    assert "bf16_tensor_tflops" in card["derived"] and card["derived_rule"]
    assert main(["catalog", "compare", "RTX 3090", "RTX 3070", "--json"]) == 0
    rows = {r["field"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["bf16_tensor_tflops"]["derived"] == [False, True]
    assert rows["memory_gib"]["derived"] == [False, False]


def test_list_marks_derived_cells(capsys: Capsys) -> None:
    assert main(["catalog", "--arch", "turing"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("GeForce RTX 2070 "))
    assert "29.8*" in line
    t4 = next(line for line in out.splitlines() if line.startswith("Tesla T4"))
    assert "*" not in t4
