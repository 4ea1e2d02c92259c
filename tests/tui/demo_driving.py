"""The frozen demo scenarios, driven as a user would: shared by the dashboard tests that need them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from gputui.core.resources import scenarios_dir
from gputui.tui.app import GpuTuiApp
from gputui.tui.demo import demo_app
from gputui.tui.widgets.fit_line import FitLine
from gputui.tui.widgets.process_table import ProcessTable
from tests.waiting import wait_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "models.toml"


def app_for(scenario: str | None, **kw: Any) -> GpuTuiApp:
    return demo_app(scenarios_dir() / scenario if scenario else None, **kw)


async def ready(pilot: Pilot[Any], fit: bool = True) -> GpuTuiApp:
    app = pilot.app
    assert isinstance(app, GpuTuiApp)
    table = app.dashboard.query_one(ProcessTable)
    await wait_for(pilot, lambda: app.latest_snapshot is not None and table.row_count > 0)
    if fit:
        line = app.dashboard.query_one(FitLine)
        await wait_for(pilot, lambda: line.passes > 0)
    await wait_for(pilot, lambda: table.settled)
    await pilot.pause(0.05)
    return app


def screen_lines(app: GpuTuiApp) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def visible_table_rows(app: GpuTuiApp) -> int:
    """Process rows on screen: the table's height less its header, at most its row count."""
    table = app.dashboard.query_one(ProcessTable)
    return min(table.row_count, max(0, table.region.height - 1))
