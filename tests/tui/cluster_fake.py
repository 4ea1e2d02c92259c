"""A two-host fleet for the cluster view, from a fake source that can stop answering."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot

from gputui.model.cluster import ClusterGpu, ClusterHost, ClusterSnapshot
from gputui.model.snapshot import DeviceSample
from gputui.sources.prometheus.api import PrometheusUnreachable
from gputui.tui.cluster_app import ClusterApp
from gputui.tui.screens.cluster import SortedTable
from tests.waiting import wait_for

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


async def ready_cluster(pilot: Pilot[Any], app: ClusterApp) -> None:
    await wait_for(pilot, lambda: bool(app.refreshes), timeout=5)
    await pilot.pause(0.1)


def cells(table: SortedTable, column: str) -> list[str]:
    return [str(table.get_cell(key, column)) for key in table.keys]
