"""The reason a listed process has no host details is read whole at 120 columns, the
longest one too (it has exited, though NVML still lists it): it was cut mid-word."""

from __future__ import annotations

from demo_driving import app_for, ready, screen_lines

from gputui.sources.host.source import why_not_visible
from gputui.tui.widgets.field import Field
from gputui.tui.widgets.process_table import ProcessTable
from tests.waiting import wait_for

EXITED = "no: it has exited (No Such Process), though NVML still lists it"


def test_an_unused_pid_reads_as_exited() -> None:
    assert why_not_visible(2**22 + 12345) == EXITED


async def test_the_exited_reason_is_whole_on_screen_at_120x40() -> None:
    app = app_for("faults.toml")
    app.why_not_visible = lambda proc: EXITED  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        table = app.dashboard.query_one(ProcessTable)
        hidden = next(k for k in table.visible_keys() if not table.processes[k].host_visible)
        table.move_cursor(row=table.visible_keys().index(hidden))
        details = app.dashboard.query_one("#details", Field)
        await wait_for(pilot, lambda: "PID" in screen_lines(app)[details.region.y])
        shown = " ".join(screen_lines(app)[details.region.y : details.region.bottom])
        assert EXITED in shown, shown
