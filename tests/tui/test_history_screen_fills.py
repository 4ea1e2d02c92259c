"""The `h` screen uses the terminal it is given: at 120x40 a 1-minute window spans the
whole width (it used 60 of 118 columns) and the charts grow into the rows that stayed empty."""

from __future__ import annotations

from demo_driving import app_for, ready, screen_lines

from gputui.tui.screens.history import HistoryScreen
from gputui.tui.widgets.history_chart import HistoryChart, buckets
from tests.waiting import wait_for


def test_fewer_points_than_columns_spread_over_the_width() -> None:
    assert buckets([1.0, 2.0], 4) == [1.0, 1.0, 2.0, 2.0]
    assert buckets([1.0, 5.0, 2.0, 3.0], 2) == [5.0, 3.0]  # more: each column's maximum


async def test_one_minute_window_fills_width_and_height_at_120x40() -> None:
    app = app_for(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        await pilot.press("h")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen))
        await pilot.press("1")  # the 1-minute window
        chart = app.screen.query_one(HistoryChart)
        await wait_for(pilot, lambda: chart.chart_height >= 4)
        await pilot.pause(0.2)
        lines = screen_lines(app)
        bars = [ln for ln in lines if "█" in ln]
        assert bars
        # Every full-block row starts at the chart's left edge (after the padding).
        assert all(ln[1] == "█" for ln in bars if set(ln.strip()) == {"█"})
        assert max(len(ln.rstrip()) for ln in bars) >= 118
        axis = next(n for n, ln in enumerate(lines) if ln.rstrip().endswith("now"))
        assert axis >= len(lines) - 4  # the charts reach down to the footer
