"""Both front-ends' rankings give throughput per launch dollar, computed once
(fit.core.price): a transformer's --all-cards rows as a layer model's do."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from gputui.catalog import load_catalog
from gputui.cli import main

REPO = Path(__file__).resolve().parents[2]


def _fit(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["fit", *argv])
    assert code in (0, 1)
    return out.getvalue()


@pytest.mark.parametrize(
    ("path", "word"),
    [("examples/llm/gpt2.json", "tokens"), ("tests/fixtures/keras/mnist_convnet.json", "samples")],
)
def test_all_cards_rows_give_throughput_per_launch_dollar(path: str, word: str) -> None:
    prices = {c.name: c.launch_price_usd for c in load_catalog().cards}
    (entry,) = json.loads(_fit(str(REPO / path), "--all-cards", "--json"))["models"]
    priced = 0
    for row in entry["ranking"]:
        assert row["throughput_unit"] == f"{word}/s"
        rate, price = row["throughput"], prices[row["card"]]
        got = row["throughput_per_1000_usd"]
        if rate and price:
            assert got == pytest.approx(rate / price * 1000)
            priced += 1
        else:
            assert got is None  # no price or no speed: no figure, never a guess
    assert priced >= 3
    text = _fit(str(REPO / path), "--all-cards")
    assert "launch price" in text and f"{word}/s per $1k (launch price $" in text
