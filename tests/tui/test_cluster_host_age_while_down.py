"""The cluster view's host ages keep counting while Prometheus is down."""

from __future__ import annotations

from gputui.tui.cluster_app import ClusterApp
from gputui.tui.screens.cluster import SortedTable
from tests.waiting import wait_for

from .cluster_fake import Source, cells, ready_cluster


async def test_host_age_keeps_counting_while_prometheus_is_down() -> None:
    source = Source()
    app = ClusterApp(source, interval=3600, clock=lambda: "12:00:00")  # type: ignore[arg-type]
    async with app.run_test(size=(120, 32)) as pilot:
        await ready_cluster(pilot, app)
        hosts = app.screen.query_one("#cluster-hosts", SortedTable)
        assert cells(hosts, "age") == ["1s", "1s"]
        source.fail = True
        app.poller.arm(0.01)
        await wait_for(pilot, lambda: bool(app.last_error), timeout=4)
        assert app.last_error
        await pilot.pause(3.2)
        ages = [int(a.rstrip("s")) for a in cells(hosts, "age")]
        assert all(a >= 4 for a in ages), ages
