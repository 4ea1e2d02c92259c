"""What nvitop users miss: the Fit screen judges a Hugging Face config or a GGUF
file as well as a models TOML (`--models FILE`, or `o` on the Fit screen)."""

from __future__ import annotations

from pathlib import Path

import pytest
from demo_driving import app_for, ready

from gputui.fit.transformer.spec import TransformerSpec
from gputui.tui.screens.fit import FitScreen
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("path", "weights"),
    [
        (ROOT / "examples" / "llm" / "gemma-2-9b.json", "bf16"),
        (ROOT / "tests" / "fixtures" / "gguf" / "tiny-llama-q8_0.gguf", "gguf-q8_0"),
    ],
)
async def test_fit_screen_judges_an_hf_config_or_a_gguf_file(path: Path, weights: str) -> None:
    app = app_for(None, models_path=path)
    async with app.run_test(size=(160, 50)) as pilot:
        await ready(pilot, fit=False)
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, FitScreen))
        fit = app.screen
        assert isinstance(fit, FitScreen)
        await wait_for(pilot, lambda: bool(fit.rows) or fit.result.error is not None, timeout=60)
        assert fit.result.error is None, fit.result.error
        assert len(fit.models) == 1 and isinstance(fit.models[0], TransformerSpec)
        assert fit.models[0].workload.weights == weights
        assert any(getattr(r, "model", None) is fit.models[0] for r in fit.rows)
