"""The recommended precision agrees with the speed the check computes on the card."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_fit

ROOT = Path(__file__).resolve().parents[2]
CONVNET = str(ROOT / "tests/fixtures/keras/mnist_convnet.keras")
MODELS = str(ROOT / "examples/models.toml")


def _check(out: str) -> dict:
    (data,) = json.loads(out)["models"]
    return data


@pytest.mark.parametrize(
    ("argv", "card"),
    [
        ((CONVNET,), "RTX 3060"),
        ((MODELS, "--model", "mnist-gan"), "RTX 3090"),
        ((MODELS, "--model", "unet-small"), "RTX 3090"),
        ((MODELS, "--model", "text-transformer"), "RTX 3090"),
    ],
)
def test_the_recommended_precision_is_the_fastest_safe_one_that_fits(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], card: str
) -> None:
    _, out, _ = run_fit(capsys, *argv, "--gpu", card, "--json")
    (gpu,) = _check(out)["estimates"]
    est = gpu["precisions"]
    rec = gpu["recommended_precision"]
    rate = {e["precision"]: e["speed"]["samples_per_s"] for e in est if e["speed"]}
    safe = [e["precision"] for e in est if e["precision"] in ("fp32", "tf32", "amp_bf16", "amp_fp16")
            and e["offered"] and e["fits"]]  # fmt: skip
    assert rate[rec] == max(rate[p] for p in safe)
    _, text, _ = run_fit(capsys, *argv, "--gpu", card)
    assert f"recommended: {rec} - the fastest computed that fits" in text


def test_the_table_choice_stands_where_it_is_fastest_or_speed_is_unknown() -> None:
    from gputui.fit.core.precision import Computed, fastest_that_fits

    rows = [Computed("fp32", True, True, 10.0), Computed("amp_bf16", True, True, 20.0)]
    assert fastest_that_fits("amp_bf16", "train", rows) is None
    unknown = [Computed("fp32", True, True, None), Computed("amp_bf16", True, True, None)]
    assert fastest_that_fits("amp_bf16", "train", unknown) is None
    # pure bf16 is faster but changes the numerics: not chosen by speed alone
    rows.append(Computed("bf16", True, True, 30.0))
    assert fastest_that_fits("amp_bf16", "train", rows) is None
    tight = [Computed("fp32", True, True, 10.0), Computed("amp_bf16", True, False, 20.0)]
    found = fastest_that_fits("amp_bf16", "train", tight)
    assert found is not None and found[0].name == "fp32"
