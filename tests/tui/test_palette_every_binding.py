"""Every dashboard key is a command palette entry, sort by each column too."""

from __future__ import annotations

from demo_driving import app_for, ready

from gputui.tui.screens.dashboard import DashboardScreen
from gputui.tui.widgets.process_table import COLUMNS, ProcessTable
from tests.waiting import wait_for


async def test_every_binding_and_each_sort_column_is_in_the_palette() -> None:
    app = app_for(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        titles = [c.title for c in app.get_system_commands(app.dashboard)]
        keys = [b.key for b in DashboardScreen.BINDINGS if b.key != "tab"]
        keys += [b.key for b in ProcessTable.BINDINGS if b.key in ("t", "space")]
        shown = {"plus,equals_sign": "+", "minus": "-", "slash": "/"}
        for key in keys:
            mark = f"({shown.get(key, key)})"
            assert any(mark in t for t in titles), (key, titles)
        assert any("(enter)" in t and "detail" in t.lower() for t in titles)
        for column in COLUMNS:
            assert f"Sort by {column.label}" in titles


async def test_palette_sorts_by_pid_and_toggles_the_tree() -> None:
    app = app_for(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        table = app.dashboard.query_one(ProcessTable)
        assert table.sort_column != "pid"
        await pilot.press("ctrl+p")
        await pilot.pause(0.2)
        await pilot.press(*"Sort by PID")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await wait_for(pilot, lambda: table.sort_column == "pid")
        await pilot.press("ctrl+p")
        await pilot.pause(0.2)
        await pilot.press(*"tree view")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await wait_for(pilot, lambda: table.tree_view)
