"""The process table's render caches must follow the data: what is drawn is what was set.

Expected strings come from the values the test hands in, never from earlier output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from textual.geometry import Region
from textual.pilot import Pilot

from gputui.tui.app import GpuTuiApp
from gputui.tui.widgets.process_table import ProcessTable


async def _wait(pilot: Pilot[Any], cond: Callable[[], bool], timeout: float = 5.0) -> None:
    for _ in range(int(timeout / 0.02)):
        if cond():
            return
        await pilot.pause(0.02)
    raise AssertionError("condition not reached in time")


def _drawn(table: ProcessTable) -> list[str]:
    return [s.text for s in table.render_lines(Region(0, 0, table.size.width, table.size.height))]


def _header(table: ProcessTable) -> str:
    return next(line for line in _drawn(table) if "Command" in line)


def _app(source: Any) -> GpuTuiApp:
    return GpuTuiApp(
        source, interval=0.05, clock=lambda: "01:02:03", hostname="t", card_lookup=None
    )


async def test_header_drawn_follows_the_sort_column(scripted_source: Any) -> None:
    app = _app(scripted_source)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.dashboard.query_one(ProcessTable)
        await _wait(pilot, lambda: table.row_count == 3)
        table.set_sort("pid", reverse=False)
        await _wait(pilot, lambda: "PID ▲" in _header(table))
        assert "GPU mem ▼" not in _header(table)
        table.set_sort("user", reverse=True)
        await _wait(pilot, lambda: "User ▼" in _header(table))
        assert "PID ▲" not in _header(table)


async def test_every_cell_changed_in_one_poll_is_drawn(scripted_source: Any) -> None:
    app = _app(scripted_source)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.dashboard.query_one(ProcessTable)
        await _wait(pilot, lambda: table.row_count == 3)
        snap = scripted_source.next_snapshot
        moved = tuple(
            replace(p, cpu_percent=150.0 + i, sm_util=70 + i, running_s=3600.0 + 61 * i)
            for i, p in enumerate(snap.processes)
        )
        scripted_source.next_snapshot = replace(snap, processes=moved)

        def rows_show_new_values() -> bool:
            lines = _drawn(table)
            for i, p in enumerate(moved):
                row = next((line for line in lines if f" {p.pid} " in line), "")
                # 3600 + 61 i seconds is 1:00:00, 1:01:01, 1:02:02 (h:mm:ss).
                expected = (f"{70 + i}", f"{150 + i}", f"1:{i:02d}:{i:02d}")
                if not all(f" {v} " in row for v in expected):
                    return False
            return True

        await _wait(pilot, rows_show_new_values)
