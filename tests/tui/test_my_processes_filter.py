"""What nvitop users miss: a "my processes" filter (m), by the real uid's name."""

from __future__ import annotations

import os
from dataclasses import replace

from conftest import make_process, make_snapshot
from demo_driving import app_for, ready

from gputui.tui.views.kill import user_name
from gputui.tui.widgets.process_table import ProcessTable


async def test_m_keeps_only_my_processes_and_m_again_everyone() -> None:
    me = user_name(os.getuid())
    app = app_for(None, interval=30.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        snap = make_snapshot(
            processes=(
                make_process(0, 1001, user=me),
                make_process(0, 1002, user="someone-else"),
                make_process(1, 1003, user=me),
            )
        )
        await app.apply_snapshot(replace(snap, timestamp=snap.timestamp + 1))
        await pilot.pause(0.05)
        table = app.dashboard.query_one(ProcessTable)
        assert len(table.visible_keys()) == 3
        await pilot.press("m")
        await pilot.pause(0.05)
        assert sorted(table.visible_keys()) == ["0:1001", "1:1003"]
        await pilot.press("m")
        await pilot.pause(0.05)
        assert len(table.visible_keys()) == 3
