"""The cluster GPU table keeps Free / Temp / Power on an 80x24 screen, and one GPU model has one name."""

from __future__ import annotations

from gputui.tui.cluster_app import ClusterApp
from gputui.tui.screens.cluster import SortedTable

from .cluster_fake import Source, cells, ready_cluster


async def test_free_temp_power_visible_at_80x24_and_one_model_one_name() -> None:
    app = ClusterApp(Source(), interval=3600, clock=lambda: "12:00:00")  # type: ignore[arg-type]
    async with app.run_test(size=(80, 24)) as pilot:
        await ready_cluster(pilot, app)
        gpus = app.screen.query_one("#cluster-gpus", SortedTable)
        lines = [s.text for s in app.screen._compositor.render_strips()]
        header = next(ln for ln in lines[gpus.region.y : gpus.region.bottom] if "Host" in ln)
        for label in ("Free", "Temp", "Power"):
            assert label in header, header
        row = next(ln for ln in lines[gpus.region.y : gpus.region.bottom] if "ws-1" in ln)
        assert "14.0" in row and "61C" in row and "250" in row
        assert set(cells(gpus, "name")) == {"GeForce RTX 3090"}
