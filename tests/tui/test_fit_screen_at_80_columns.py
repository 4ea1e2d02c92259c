"""The Fit screen's verdicts and its Now/Total columns stay visible on an 80x24 terminal."""

from __future__ import annotations

from typing import Any

from gputui.tui.screens.fit import FitScreen
from tests.waiting import wait_for

from .scripted_app import ROOT, make_app, screen_lines


async def test_fit_verdicts_visible_at_80_columns(scripted_source: Any) -> None:
    app = make_app(scripted_source, interval=30.0, models_path=ROOT / "examples" / "models.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await pilot.press("f")
        screen = app.screen
        assert isinstance(screen, FitScreen)
        await wait_for(pilot, lambda: bool(screen.checks) and not screen.busy)
        await pilot.pause()
        lines = screen_lines(app)
        table = screen.query_one("#fit-table")
        header = lines[table.region.y]
        assert "Now" in header and "Total" in header, header
        body = "\n".join(lines[table.region.y + 1 : table.region.bottom])
        assert "fits" in body or "does not fit" in body or "tight" in body
