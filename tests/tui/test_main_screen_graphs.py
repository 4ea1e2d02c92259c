"""On a wide terminal the main screen draws history graphs with a time axis beside the
GPU panels, as nvitop and nvtop do; at 200x50 the room beside the sparklines stayed blank."""

from __future__ import annotations

from typing import Any

from demo_driving import app_for, ready, screen_lines

from gputui.tui.widgets.gpu_graphs import GpuGraphs
from gputui.tui.widgets.gpu_panel import GpuPanel
from tests.waiting import wait_for


async def test_graphs_with_time_marks_beside_eight_gpus_at_200x50() -> None:
    app = app_for("demo-8gpu.toml")
    async with app.run_test(size=(200, 50)) as pilot:
        await ready(pilot, fit=False)
        graphs = app.dashboard.query_one(GpuGraphs)
        await wait_for(pilot, lambda: graphs.display and graphs.region.width > 0)
        panels = list(app.dashboard.query(GpuPanel))
        assert graphs.region.x >= max(p.region.right for p in panels)
        assert graphs.region.width >= 70  # the room that stayed blank
        await wait_for(pilot, lambda: graphs.region.height == sum(p.region.height for p in panels))
        lines = [ln[graphs.region.x :] for ln in screen_lines(app)]
        rows = lines[graphs.region.y : graphs.region.bottom]
        for index in range(8):
            assert any(r.lstrip().startswith(f"{index} UTIL %") for r in rows), index
        axis = rows[-1].rstrip()
        assert axis.endswith("now") and "-30s│" in axis and "-1m│" in axis, axis
        # Charts, not blanks: every GPU's rows hold bars on the fixed 0-100 % scale.
        assert sum(r.count("█") for r in rows) > 8 * 60


async def test_no_graphs_at_120_columns_and_they_come_when_widened() -> None:
    app = app_for(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        graphs = app.dashboard.query_one(GpuGraphs)
        assert not graphs.display or graphs.region.width == 0
        await pilot.resize_terminal(200, 50)
        await wait_for(pilot, lambda: graphs.region.width > 0)
        await wait_for(
            pilot, lambda: screen_lines(app)[graphs.region.bottom - 1].rstrip().endswith("now")
        )


def test_graph_snapshot_200x50(snap_compare: Any) -> None:
    from test_tui_snapshots import app_for as snapshot_app
    from test_tui_snapshots import ready as snapshot_ready

    assert snap_compare(
        snapshot_app("demo-8gpu.toml"), terminal_size=(200, 50), run_before=snapshot_ready
    )
