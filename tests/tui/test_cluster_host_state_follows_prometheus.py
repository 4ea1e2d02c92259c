"""A host's state in the cluster view follows Prometheus: while Prometheus does not answer,
nobody knows whether a host is up, so its state reads "unknown" at once (not "up" until its
last sample grows stale), and "up" again with the first answer."""

from __future__ import annotations

from gputui.tui.cluster_app import ClusterApp
from gputui.tui.screens.cluster import SortedTable
from tests.waiting import wait_for

from .cluster_fake import Source, cells, ready_cluster


async def test_host_state_is_unknown_while_prometheus_does_not_answer() -> None:
    source = Source()
    app = ClusterApp(source, interval=3600, clock=lambda: "12:00:00")  # type: ignore[arg-type]
    async with app.run_test(size=(120, 32)) as pilot:
        await ready_cluster(pilot, app)
        hosts = app.screen.query_one("#cluster-hosts", SortedTable)
        gpus = app.screen.query_one("#cluster-gpus", SortedTable)
        assert cells(hosts, "state") == ["up", "up"]
        source.fail = True
        app.poller.arm(0.01)
        await wait_for(pilot, lambda: bool(app.last_error), timeout=4)
        await pilot.pause(0.05)
        assert cells(hosts, "state") == ["unknown", "unknown"]
        assert set(cells(gpus, "state")) == {"unknown"}
        source.fail = False
        app.poller.arm(0.01)
        await wait_for(pilot, lambda: app.last_error is None, timeout=4)
        await pilot.pause(0.05)
        assert cells(hosts, "state") == ["up", "up"]
        assert set(cells(gpus, "state")) == {"up"}


async def test_the_host_screen_says_unknown_too() -> None:
    from textual.widgets import Static

    from gputui.tui.screens.cluster import HostScreen

    source = Source()
    app = ClusterApp(source, interval=3600, clock=lambda: "12:00:00")  # type: ignore[arg-type]
    async with app.run_test(size=(120, 32)) as pilot:
        await ready_cluster(pilot, app)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, HostScreen), timeout=4)
        info = app.screen.query_one("#host-info", Static)
        assert "  up  " in str(info.content)
        source.fail = True
        app.poller.arm(0.01)
        await wait_for(pilot, lambda: bool(app.last_error), timeout=4)
        await pilot.pause(0.05)
        assert "  unknown  " in str(info.content)
        gpus = app.screen.query_one("#host-gpus", SortedTable)
        assert set(cells(gpus, "state")) == {"unknown"}
