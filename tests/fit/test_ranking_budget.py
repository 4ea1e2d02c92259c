"""`gputui fit --all-cards` as "which GPU should I buy": price, per-dollar and per-watt
columns in the text, `--budget USD`, and the batch the ranking is at, for both kinds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.catalog import load_catalog
from tests.conftest import run_fit

REPO = Path(__file__).resolve().parents[2]
KERAS = str(REPO / "tests" / "fixtures" / "keras" / "mnist_convnet.json")
HF = str(REPO / "examples" / "llm" / "gpt2.json")
PRICES = {c.name: c.launch_price_usd for c in load_catalog().cards}


def table_rows(text: str) -> list[str]:
    """The ranking table's card rows ('   1 GeForce RTX 4090 ...'; the per-dollar and
    per-watt lists below it are indented further)."""
    return [ln for ln in text.splitlines() if ln[2:4].strip().isdigit() and ln[4:5] == " "]


@pytest.mark.parametrize("path", [KERAS, HF])
def test_the_text_ranking_shows_price_per_dollar_and_per_watt(
    capsys: pytest.CaptureFixture[str], path: str
) -> None:
    code, out, _ = run_fit(capsys, path, "--all-cards")
    assert code in (0, 1)
    head = next(line for line in out.splitlines() if line.lstrip().startswith("# card"))
    assert "launch price" in head and "per $1k" in head and "per W" in head
    row = next(r for r in table_rows(out) if " GeForce RTX 4090 " in r)
    assert "$1,599" in row  # its launch price, in the table itself
    unpriced = next(r for r in table_rows(out) if " H100 SXM5 80GB " in r)
    assert "unknown" in unpriced.split("H100 SXM5 80GB", 1)[1]


@pytest.mark.parametrize("path", [KERAS, HF])
def test_budget_ranks_the_cards_within_it_then_those_without_a_price(
    capsys: pytest.CaptureFixture[str], path: str
) -> None:
    code, out, _ = run_fit(capsys, path, "--all-cards", "--budget", "$1,000", "--json")
    assert code in (0, 1)
    (entry,) = json.loads(out)["models"]
    rows = entry["ranking"]
    marks = [r["budget"] for r in rows]
    first_unknown = marks.index("price unknown")
    assert set(marks[:first_unknown]) == {"within"} and set(marks[first_unknown:]) == {
        "price unknown"
    }
    for r in rows:
        price = PRICES[r["card"]]
        assert (price is None) if r["budget"] == "price unknown" else price <= 1000
    over = {n for n, p in PRICES.items() if p is not None and p > 1000}
    assert over and not over & {r["card"] for r in rows}  # left out
    code, text, _ = run_fit(capsys, path, "--all-cards", "--budget", "1000")
    assert f"{len(over)} over it left out" in text and "-- price unknown" in text
    assert len(table_rows(text)) == len(rows)


def test_without_a_budget_rows_have_no_budget_mark(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_fit(capsys, KERAS, "--all-cards", "--json")
    (entry,) = json.loads(out)["models"]
    assert {r["budget"] for r in entry["ranking"]} == {None}


@pytest.mark.parametrize(
    "value", ["abc", "0", "-5", "nan", "inf", "1e12", "9" * 5000, "\u00b2", "\x1b[2J"]
)
def test_a_bad_budget_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    code, out, err = run_fit(capsys, KERAS, "--all-cards", "--budget", value)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "--budget" in err and "\x1b" not in err


def test_budget_needs_all_cards(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_fit(capsys, KERAS, "--gpu", "RTX 3090", "--budget", "1000")
    assert code == 2 and "--all-cards" in err


def test_the_ranking_says_which_batch_it_is_at(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_fit(capsys, KERAS, "--all-cards")
    assert "ranked at batch 32 (the model's batch_size" in out and "--batch-size N" in out
    _, out, _ = run_fit(capsys, KERAS, "--all-cards", "--batch-size", "256")
    assert "ranked at batch 256 (--batch-size):" in out
    _, out, _ = run_fit(capsys, HF, "--all-cards", "--batch-size", "4")
    assert "ranked at batch 4 (--batch-size):" in out
