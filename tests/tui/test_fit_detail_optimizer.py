"""The Fit screen's detail names no optimizer for an inference model, and the model's own for training."""

from __future__ import annotations

from demo_driving import EXAMPLES, app_for, ready

from gputui.tui.screens.fit import FitScreen
from tests.waiting import wait_for


async def test_inference_model_names_no_optimizer() -> None:
    app = app_for(None, models_path=EXAMPLES)
    async with app.run_test(size=(160, 50)) as pilot:
        await ready(pilot, fit=False)
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, FitScreen))
        screen = app.screen
        assert isinstance(screen, FitScreen)
        await wait_for(pilot, lambda: bool(screen.rows), timeout=60)
        inference = [
            r
            for r in screen.rows
            if getattr(r, "mode", None) == "inference" and hasattr(r, "chosen")
        ]
        assert inference
        head = screen.detail(inference[0]).renderables[0].plain  # type: ignore[attr-defined]
        assert ", inference, batch" in head and "adam" not in head.split("batch")[0]
        train = next(r for r in screen.rows if getattr(r, "mode", None) == "train")
        if hasattr(train, "chosen"):
            assert f", train, {train.model.optimizer}," in screen.detail(train).renderables[0].plain
