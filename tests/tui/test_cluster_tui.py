"""The cluster view driven as a user would (Pilot), against a real Prometheus and fleet."""

from __future__ import annotations

import pytest

from gputui.sources.prometheus.source import PrometheusSource
from gputui.tui.cluster_app import ClusterApp
from gputui.tui.screens.cluster import ClusterScreen, HostScreen, SortedTable
from tests.fleet import Fleet
from tests.prometheus_harness import PROMETHEUS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        PROMETHEUS is None, reason="needs the prometheus binary (apt install prometheus)"
    ),
]


async def wait_refreshed(app: ClusterApp, pilot: object, count: int = 1) -> None:
    for _ in range(100):
        if app.refreshes >= count:
            return
        await pilot.pause(0.05)  # type: ignore[attr-defined]
    raise AssertionError(f"no refresh; last error: {app.last_error}")


def column(table: SortedTable, key: str) -> list[str]:
    return [str(table.get_cell(row, key)) for row in table.keys]


async def test_hosts_and_gpus_of_the_fleet(fleet: Fleet) -> None:
    app = ClusterApp(PrometheusSource(fleet.prom.url), interval=1.0)
    async with app.run_test(size=(150, 45)) as pilot:
        await wait_refreshed(app, pilot)
        hosts = app.screen.query_one("#cluster-hosts", SortedTable)
        gpus = app.screen.query_one("#cluster-gpus", SortedTable)
        assert column(hosts, "host") == ["dgx-1", "dgx-2", "node-a", "node-b"]
        assert column(hosts, "gpus") == ["4", "2", "2", "2"]
        assert column(hosts, "state")[2] == "up (sim)"
        assert len(gpus.keys) == 10
        # dgx-2 reports no power and NaN temperatures: N/A, never 0
        dgx2 = [k for k in gpus.keys if k.startswith("dgx-2")]
        assert {str(gpus.get_cell(k, "temp")) for k in dgx2} == {"N/A"}
        assert {str(gpus.get_cell(k, "power")) for k in dgx2} == {"N/A"}
        assert "4 hosts, 10 GPUs" in str(app.screen.query_one("#cluster-info").content)


async def test_sort_and_filter_like_the_process_table(fleet: Fleet) -> None:
    app = ClusterApp(PrometheusSource(fleet.prom.url), interval=1.0)
    async with app.run_test(size=(150, 45)) as pilot:
        await wait_refreshed(app, pilot)
        hosts = app.screen.query_one("#cluster-hosts", SortedTable)
        for _ in range(2):  # Host -> State -> GPUs
            await pilot.press("s")
        assert hosts.sort_column == "gpus"
        await pilot.press("r")  # most GPUs first
        assert column(hosts, "host")[0] == "dgx-1"
        await pilot.press("slash")
        await pilot.press(*"dgx")
        await pilot.pause(0.1)
        gpus = app.screen.query_one("#cluster-gpus", SortedTable)
        assert sorted(column(hosts, "host")) == ["dgx-1", "dgx-2"]
        assert {k.split("\x00")[0] for k in gpus.keys} == {"dgx-1", "dgx-2"} and len(gpus.keys) == 6
        await pilot.press("escape")
        # the GPUs of the hosts back on screen are read at once (not at the next refresh)
        for _ in range(40):
            await pilot.pause(0.05)
            if len(gpus.keys) == 10:
                break
        assert len(gpus.keys) == 10


async def test_enter_on_a_host_shows_its_gpus_and_processes_read_only(fleet: Fleet) -> None:
    app = ClusterApp(PrometheusSource(fleet.prom.url), interval=1.0)
    async with app.run_test(size=(150, 45)) as pilot:
        await wait_refreshed(app, pilot)
        await pilot.press("down", "down", "enter")  # node-a
        await pilot.pause(0.1)
        screen = app.screen
        assert isinstance(screen, HostScreen) and screen.host.name == "node-a"
        procs = screen.query_one("#host-processes", SortedTable)
        assert column(procs, "pid") == ["4242", "5151"]
        assert column(procs, "user") == ["alice", "bob"]
        assert all("SECRET" not in c for c in column(procs, "command"))
        assert len(screen.query_one("#host-gpus", SortedTable).keys) == 2
        await pilot.press("k")  # no kill in the cluster view: nothing happens
        await pilot.pause(0.05)
        assert app.screen is screen
        await pilot.press("escape", "up", "up", "enter")  # dgx-1: dcgm-exporter only
        await pilot.pause(0.1)
        assert isinstance(app.screen, HostScreen) and app.screen.host.name == "dgx-1"
        note = str(app.screen.query_one("#host-note").content)
        assert "dcgm-exporter only" in note
    assert not any("kill" in b.action for b in ClusterApp.BINDINGS)
    assert not any("kill" in b.action for b in ClusterScreen.BINDINGS + HostScreen.BINDINGS)


async def test_history_sparklines_come_from_a_range_query(fleet: Fleet) -> None:
    source = PrometheusSource(fleet.prom.url)
    app = ClusterApp(source, interval=1.0)
    async with app.run_test(size=(150, 45)) as pilot:
        await wait_refreshed(app, pilot)
        gpus = app.screen.query_one("#cluster-gpus", SortedTable)

        def shown() -> set[tuple[str, int]]:
            return {(h, int(g)) for h, g in (k.split("\x00") for k in gpus.keys)}

        # Under load the first poll can detail fewer hosts than the sparklines' range query
        # covers (it may start before the host table is laid out): a later poll details
        # every host on screen. Seen twice in full runs on a loaded two-core box.
        for count in range(2, 6):
            if set(app.history) == shown():
                break
            await wait_refreshed(app, pilot, count)
        lines = column(gpus, "history")
        assert all(line.strip() for line in lines)  # every GPU has a line from the start
        assert set(app.history) == shown()
        # node-a GPU 0 is scraped from gputui (a training job, busy) and a dcgm page (0 %):
        # its line is gputui's, like its current values
        assert max(app.history[("node-a", 0)]) > 20
