"""The reason a process's host details are not visible is shown whole at 120 columns."""

from __future__ import annotations

from demo_driving import app_for, ready, screen_lines

from gputui.tui.widgets.field import Field
from gputui.tui.widgets.process_table import ProcessTable


async def test_not_visible_reason_is_not_cut_at_120() -> None:
    app = app_for("faults.toml")
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        table = app.dashboard.query_one(ProcessTable)
        hidden = next(k for k in table.visible_keys() if not table.processes[k].host_visible)
        table.move_cursor(row=table.visible_keys().index(hidden))
        await pilot.pause(0.1)
        details = app.dashboard.query_one("#details", Field)
        # The reason starts the details' second line, where nothing before it can push it out.
        line = screen_lines(app)[details.region.y + 1]
        assert line.startswith(" host details: ")
        reason_end = line.index("  ·  ")
        assert "…" not in line[:reason_end]
