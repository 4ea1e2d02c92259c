"""The hint "no models configured: f to choose a file" holds: `f`, then `o` on the Fit
screen opens a models file by its path, and the dashboard's fit line follows it."""

from __future__ import annotations

from pathlib import Path

import pytest
from demo_driving import EXAMPLES, app_for, ready

from gputui.tui.screens.fit import FitScreen
from gputui.tui.screens.open_models import OpenModelsScreen
from gputui.tui.widgets.fit_line import FitLine
from tests.waiting import wait_for


async def test_f_then_o_opens_a_models_file_and_the_fit_line_follows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    app = app_for(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        line = app.dashboard.query_one(FitLine)
        assert "no models configured" in line.render().plain
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, FitScreen))
        fit = app.screen
        assert isinstance(fit, FitScreen)
        await pilot.press("o")
        await wait_for(pilot, lambda: isinstance(app.screen, OpenModelsScreen))
        await pilot.press(*str(tmp_path / "missing.toml"), "enter")
        await pilot.pause(0.1)
        assert isinstance(app.screen, OpenModelsScreen)  # stays, says "no such file"
        field = app.screen.query_one("#open-models-path")
        field.value = str(EXAMPLES)  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen is fit)
        await wait_for(pilot, lambda: fit.path == EXAMPLES and bool(fit.models), timeout=60)
        assert app.models_path == EXAMPLES
        await pilot.press("escape")
        await wait_for(pilot, lambda: "fits now" in line.render().plain, timeout=60)
