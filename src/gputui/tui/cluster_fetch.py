"""What the cluster app asks of its source, whichever kind it is given.

A PrometheusSource is read through sources/prometheus/view.py (the host table
aggregated by Prometheus, GPUs only for the hosts on screen). Any other object
with `poll_cluster()` and `history()` (the screenshots' fixed fleet, a test's
fake) is read whole and summarised here, so the screens have one input.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Protocol

from gputui.model.cluster import ClusterHost
from gputui.model.cluster_summary import HostSummary
from gputui.render.cluster_text import host_row
from gputui.sources.prometheus.source import PrometheusSource
from gputui.sources.prometheus.view import ViewData, ViewReader

History = dict[tuple[str, int], list[float]]


class Reader(Protocol):
    url: str

    @property
    def requests(self) -> int:
        """HTTP requests made so far."""
        ...

    def ask(self, names: Collection[str]) -> None: ...

    def poll(self, first: int = 0) -> ViewData: ...

    def history(self, metric: str, seconds: float, points: int) -> History: ...


def summary_of(h: ClusterHost) -> HostSummary:
    """A host read GPU by GPU, summarised as Prometheus would (render.cluster_text's figures)."""
    r = host_row(h)
    return HostSummary(
        name=h.name,
        gpus=r["gpus"],
        state=h.state,
        gpus_lost=r["gpus_lost"],
        util_mean=r["util_mean"],
        util_max=r["util_max"],
        memory_used=r["memory_used"],
        memory_total=r["memory_total"],
        hottest_c=r["hottest_c"],
        hottest_gpu=r["hottest_gpu"],
        power_w=r["power_w"],
        last_seen=h.last_seen,
        age_s=h.age_s,
        instances=h.instances,
        exporters=h.exporters,
        simulated=h.simulated,
        processes=r["processes"],
    )


class WholeReader:
    """A source read whole every refresh (no aggregation to ask for)."""

    def __init__(self, source: Any) -> None:
        self.source = source
        self.url = str(source.url)

    @property
    def requests(self) -> int:
        client = getattr(self.source, "client", None)
        return int(getattr(client, "requests", 0))

    def ask(self, names: Collection[str]) -> None:
        pass  # every host's GPUs come anyway

    def poll(self, first: int = 0) -> ViewData:
        cluster = self.source.poll_cluster()
        hosts = tuple(summary_of(h) for h in cluster.hosts)
        return ViewData(hosts, cluster, cluster.requests, None)

    def history(self, metric: str, seconds: float, points: int) -> History:
        result: History = self.source.history(metric, seconds, points=points)
        return result


def reader_for(source: Any) -> Reader:
    if isinstance(source, PrometheusSource):
        return ViewReader(source)
    return WholeReader(source)
