"""What nvitop users miss: the %GMBW column (a process's share of the memory
bandwidth, NVML's per-process memory utilization), shown where the width allows."""

from __future__ import annotations

from dataclasses import replace

from conftest import make_process, make_snapshot
from demo_driving import app_for, ready

from gputui.tui.widgets.process_table import ProcessTable


async def test_gmbw_column_shows_memory_utilization_at_200_columns() -> None:
    app = app_for(None, interval=30.0)
    async with app.run_test(size=(200, 40)) as pilot:
        await ready(pilot, fit=False)
        snap = make_snapshot(
            processes=(make_process(0, 1001, mem_util=37), make_process(1, 1002, mem_util=None))
        )
        await app.apply_snapshot(replace(snap, timestamp=snap.timestamp + 1))
        await pilot.pause(0.05)
        table = app.dashboard.query_one(ProcessTable)
        keys = [c.key for c in table.shown]
        assert "gmbw" in keys
        at = keys.index("gmbw")
        assert table.row_text("0:1001")[at] == "37"
        assert table.row_text("1:1002")[at] == "N/A"  # never 0 for "not reported"
        table.set_sort("gmbw")
        assert table.visible_keys()[0] == "0:1001"
