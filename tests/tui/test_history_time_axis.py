"""What nvitop users miss: a time axis under the history graphs (marks at 30 s,
1 min and 2 min before now)."""

from __future__ import annotations

from demo_driving import app_for, ready, screen_lines

from gputui.tui.screens.history import HistoryScreen
from gputui.tui.views.time_axis import axis_line
from gputui.tui.widgets.history_chart import HistoryChart
from tests.waiting import wait_for


def test_marks_fall_where_their_time_is() -> None:
    line = axis_line(100, 100, 300.0)  # 3 s a column
    assert line.endswith("now") and len(line) == 100
    for label, seconds in (("-30s", 30), ("-1m", 60), ("-2m", 120)):
        x = 99 - round(seconds / 3)
        assert line[x] == "│" and line[x - len(label) : x] == label
    assert "-5m" not in axis_line(100, 100, 200.0)  # no mark past the data kept


async def test_history_screen_shows_the_axis() -> None:
    app = app_for(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        await pilot.press("h")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen))
        await pilot.pause(0.2)
        chart = app.screen.query_one(HistoryChart)
        lines = screen_lines(app)[chart.region.y : chart.region.bottom]
        axis = next(ln for ln in lines if ln.rstrip().endswith("now"))
        for label in ("-30s", "-1m"):  # the demo keeps 2 min: -2m would be the left edge
            assert label + "│" in axis, axis
