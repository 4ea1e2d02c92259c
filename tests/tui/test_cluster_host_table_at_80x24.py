"""The cluster view's host table fits an 80x24 terminal: Hottest, Power and Age stay on screen
(the highest utilisation and the sparkline give way, by priority), a state that grows on a
later refresh ("down (sim)") is not cut, and the info line does not lose its times to the URL."""

from __future__ import annotations

import dataclasses

from gputui.model.cluster import ClusterSnapshot
from gputui.tui.screens.cluster import SortedTable

from .test_cluster_snapshots import FixedSource, fleet, make_app, ready


class GrowingSource(FixedSource):
    """The fleet, whose gpu-09 is first up, then down and simulated."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False

    def poll_cluster(self) -> ClusterSnapshot:
        snap = fleet()
        state = "down" if self.down else "up"
        hosts = tuple(
            dataclasses.replace(h, state=state, simulated=True) if h.name == "gpu-09" else h
            for h in snap.hosts
        )
        return dataclasses.replace(snap, hosts=hosts)


def _screen_lines(app: object) -> list[str]:
    return [s.text for s in app.screen._compositor.render_strips()]  # type: ignore[attr-defined]


async def test_host_table_fits_80x24() -> None:
    source = GrowingSource()
    app = make_app(source)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        hosts = app.screen.query_one("#cluster-hosts", SortedTable)
        source.down = True
        app.poller.arm(0.01)
        before = app.refreshes
        for _ in range(100):
            if app.refreshes > before:
                break
            await pilot.pause(0.02)
        await pilot.pause(0.1)
        lines = _screen_lines(app)
        table = lines[hosts.region.y : hosts.region.bottom]
        header = table[0]
        for label in ("Host", "State", "GPUs", "Util", "Mem GiB", "Hottest", "Power W", "Age"):
            assert label in header, header
        row = next(ln for ln in table if "gpu-09" in ln)
        assert (
            "down (sim)" in row
            and "60C GPU 0" in row
            and "300" in row
            and row.rstrip()[-2:] == "7m"
        )
        assert all(len(ln.rstrip()) <= 80 for ln in table)
        info = lines[0]
        assert "4 hosts, 8 GPUs" in info and "updated 12:00:00" in info and "every 3600" in info


async def test_the_gpu_table_keeps_its_figures_at_80_columns_and_shows_sms_wider() -> None:
    """GPM's SMs column is the first to give way: at 80 columns the GPU table keeps Util,
    memory, temperature and power; from 100 columns SMs is there too."""
    for width, sms in ((80, False), (120, True)):
        app = make_app(FixedSource())
        async with app.run_test(size=(width, 32)) as pilot:
            await ready(pilot)
            gpus = app.screen.query_one("#cluster-gpus", SortedTable)
            header = _screen_lines(app)[gpus.region.y]
            assert ("SMs" in header) is sms, header
            for label in ("Util", "Mem GiB", "Temp"):
                assert label in header, header
