"""Issue 21 item 7: the cluster view's host ages keep counting while Prometheus is down,
Free / Temp / Power stay on an 80x24 screen, and one GPU model has one name."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot

from gputui.model.cluster import ClusterGpu, ClusterHost, ClusterSnapshot
from gputui.model.snapshot import DeviceSample
from gputui.sources.prometheus.api import PrometheusUnreachable
from gputui.tui.cluster_app import ClusterApp
from gputui.tui.screens.cluster import SortedTable

GIB = 1 << 30
T = 1_767_225_600.0


def gpu(host: str, index: int, name: str) -> ClusterGpu:
    sample = DeviceSample(
        utilization_gpu=40,
        memory_used=10 * GIB,
        memory_free=14 * GIB,
        memory_total=24 * GIB,
        temperature_c=61,
        power_w=250.0,
    )
    return ClusterGpu(host, index, name, f"GPU-{host}-{index}", None, sample, True, T - 1)


def fleet() -> ClusterSnapshot:
    hosts = tuple(
        ClusterHost(
            name,
            (gpu(name, 0, model),),
            state="up",
            last_seen=T - 1,
            age_s=1.0,
            instances=(f"{name}:9835",),
            exporters=("gputui",),
        )
        for name, model in (("ws-1", "NVIDIA GeForce RTX 3090"), ("ws-2", "GeForce RTX 3090"))
    )
    return ClusterSnapshot(T, "http://prometheus:9090", hosts)


class Source:
    url = "http://prometheus:9090"

    def __init__(self) -> None:
        self.fail = False

    def poll_cluster(self) -> ClusterSnapshot:
        if self.fail:
            raise PrometheusUnreachable("cannot reach http://prometheus:9090: Connection refused")
        return fleet()

    def history(self, *args: Any, **kwargs: Any) -> dict[tuple[str, int], list[float]]:
        return {}


async def _ready(pilot: Pilot[Any], app: ClusterApp) -> None:
    for _ in range(250):
        if app.refreshes:
            break
        await pilot.pause(0.02)
    await pilot.pause(0.1)


def _cells(table: SortedTable, column: str) -> list[str]:
    return [str(table.get_cell(key, column)) for key in table.keys]


async def test_host_age_keeps_counting_while_prometheus_is_down() -> None:
    source = Source()
    app = ClusterApp(source, interval=3600, clock=lambda: "12:00:00")  # type: ignore[arg-type]
    async with app.run_test(size=(120, 32)) as pilot:
        await _ready(pilot, app)
        hosts = app.screen.query_one("#cluster-hosts", SortedTable)
        assert _cells(hosts, "age") == ["1s", "1s"]
        source.fail = True
        app.poller.arm(0.01)
        for _ in range(200):
            if app.last_error:
                break
            await pilot.pause(0.02)
        assert app.last_error
        await pilot.pause(3.2)
        ages = [int(a.rstrip("s")) for a in _cells(hosts, "age")]
        assert all(a >= 4 for a in ages), ages


async def test_free_temp_power_visible_at_80x24_and_one_model_one_name() -> None:
    app = ClusterApp(Source(), interval=3600, clock=lambda: "12:00:00")  # type: ignore[arg-type]
    async with app.run_test(size=(80, 24)) as pilot:
        await _ready(pilot, app)
        gpus = app.screen.query_one("#cluster-gpus", SortedTable)
        lines = [s.text for s in app.screen._compositor.render_strips()]
        header = next(ln for ln in lines[gpus.region.y : gpus.region.bottom] if "Host" in ln)
        for label in ("Free", "Temp", "Power"):
            assert label in header, header
        row = next(ln for ln in lines[gpus.region.y : gpus.region.bottom] if "ws-1" in ln)
        assert "14.0" in row and "61C" in row and "250" in row
        assert set(_cells(gpus, "name")) == {"GeForce RTX 3090"}
