"""A column empty on every row (Container) is hidden, and the command gets
the width (nvitop shows about 55 characters at 120 columns; 17 were left here)."""

from __future__ import annotations

from dataclasses import replace

from conftest import make_process, make_snapshot
from demo_driving import app_for, ready

from gputui.tui.widgets.process_table import ProcessTable


async def test_empty_container_column_hidden_and_command_wide_120() -> None:
    app = app_for("mig.toml")  # no process in a container
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        table = app.dashboard.query_one(ProcessTable)
        keys = [c.key for c in table.shown]
        assert "container" not in keys
        width = table.columns[table._column_key("command")].width
        assert width >= 40


async def test_container_column_comes_back_with_a_container_process() -> None:
    app = app_for("mig.toml", interval=30.0)  # no poll replaces the snapshot given below
    async with app.run_test(size=(200, 40)) as pilot:
        await ready(pilot, fit=False)
        table = app.dashboard.query_one(ProcessTable)
        assert "container" not in [c.key for c in table.shown]
        snap = make_snapshot(
            processes=(make_process(0, 1001), make_process(1, 1002, container="k8s:ns/pod"))
        )
        await app.apply_snapshot(replace(snap, timestamp=snap.timestamp + 1))
        await pilot.pause(0.05)
        assert "container" in [c.key for c in table.shown]
        assert "k8s:ns/pod" in table.row_text("1:1002")
