"""What the cluster view reads per refresh: the host table aggregated, GPUs only for some hosts.

A refresh makes five requests whatever the size of the fleet: three queries
for the whole host table (summary.py, with the targets' `up`), and source.py's
per-GPU queries restricted to the hosts the view names (those on screen and
the selected one, at most MAX_HOSTS), joined into two (identities and
freshness; every value). Besides: /api/v1/targets once a minute (scrape
intervals), and the sparklines' range query for the same hosts when due.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from gputui.model.cluster import ClusterSnapshot
from gputui.model.cluster_summary import HostSummary, UserTotal
from gputui.sources.prometheus.api import PrometheusBadResponse, PrometheusRequestError, Sample
from gputui.sources.prometheus.series import (
    GPU_UP,
    IDENTITY_LABELS,
    LABELLED_METRICS,
    join_labels,
)
from gputui.sources.prometheus.source import TARGETS_EVERY_S, PrometheusSource
from gputui.sources.prometheus.summary import SummaryQuery, summarise, user_totals

MAX_HOSTS = 200  # hosts whose GPUs one refresh reads: more than any terminal shows
METRIC = "gputui_metric"  # the label that names each metric's series in the values query
HOST_LABELS = ("Hostname", "hostname", "instance")  # the order host_of names a host by


@dataclass(frozen=True, slots=True)
class ViewData:
    hosts: tuple[HostSummary, ...]  # every host of the fleet, aggregated
    detail: ClusterSnapshot  # the GPUs and processes of the hosts asked for
    requests: int  # HTTP requests this refresh made
    scrape_interval: float | None  # the fastest scrape interval among the fleet's targets
    users: tuple[UserTotal, ...] = ()  # GPU memory per user across the fleet


def _regex(names: Collection[str]) -> str:
    """An anchored RE2 alternation of the names, quoted for a PromQL string."""
    alternation = "|".join(re.escape(n) for n in sorted(names))
    return alternation.replace("\\", "\\\\").replace('"', '\\"')


class HostsSource(PrometheusSource):
    """source.py's per-GPU reader restricted to named hosts (`hosts`, set before a poll)."""

    hosts: dict[str, frozenset[str]]  # label (Hostname, hostname, instance) -> host names

    def restricted(self, name: str | None) -> list[str]:
        """One selector per host label that names some of the hosts."""
        base = [f'__name__="{name}"'] if name else []
        if self.matchers:
            base.append(self.matchers)
        return [
            "{" + ", ".join([*base, f'{label}=~"{_regex(names)}"']) + "}"
            for label, names in self.hosts.items()
            if names
        ] or ['{__name__="gputui_no_host_asked"}']  # nothing asked: an empty answer

    def metric_query(self, name: str) -> str:
        return f"max by ({join_labels(name)}) ({' or '.join(self.restricted(name))})"

    def freshness_query(self) -> str:
        stamps = [
            f"timestamp({s})" for n in ("DCGM_FI_DEV_FB_USED", GPU_UP) for s in self.restricted(n)
        ]
        return f"max by ({IDENTITY_LABELS}) ({' or '.join(stamps)})"

    def labelled_query(self) -> str:
        names = "|".join(LABELLED_METRICS)
        return " or ".join("{" + f'__name__=~"{names}", ' + s[1:] for s in self.restricted(None))

    def values_query(self) -> str:
        """Every metric's values and the labelled extras in one query: each metric's series
        are named in METRIC (label_replace), so one answer splits as per-metric ones do."""
        named = [  # not __name__: `or` matches series without their name, dropping all but one
            f'label_replace({self.metric_query(n)}, "{METRIC}", "{n}", "", "")'
            for n in (*self.metrics, GPU_UP)
        ]
        return " or ".join([*named, f"({self.labelled_query()})"])

    def poll_hosts(self, up: Sequence[Sample]) -> ClusterSnapshot:
        """poll_cluster's refresh in two queries; `up`: the targets' up, read by the caller."""
        before = self.client.requests
        now = self.clock()
        fresh = self.client.query(self.freshness_query(), at=now)
        values = self.client.query(self.values_query(), at=now)
        for v in values:
            if METRIC in v.labels:
                v.labels["__name__"] = v.labels.pop(METRIC)
        return self._assembled(values, fresh, up, now, before)


class ViewReader:
    """The cluster view's reads from one PrometheusSource (its client, matchers and metrics)."""

    def __init__(self, source: PrometheusSource) -> None:
        self.source = source
        self.url = source.url
        self.client = source.client
        self.query = SummaryQuery(source.matchers)
        self.detail = HostsSource(
            source.url, match=source.matchers, metrics=source.metrics, clock=source.clock,
            client=source.client,
        )  # fmt: skip
        self.detail.hosts = {}
        self._known: dict[str, HostSummary] = {}
        self._intervals: dict[str, float] = {}
        self._intervals_at: float | None = None

    def _scrape_intervals(self, now: float) -> None:
        if self._intervals_at is not None and now - self._intervals_at < TARGETS_EVERY_S:
            return
        try:
            self._intervals = self.client.scrape_intervals()
        except PrometheusBadResponse:
            raise
        except PrometheusRequestError:
            self._intervals = {}  # an API without /targets: the default applies
        self._intervals_at = now
        self.detail._intervals, self.detail._intervals_at = self._intervals, now

    @property
    def requests(self) -> int:
        """HTTP requests made so far (the per-GPU reader shares the client)."""
        return self.client.requests

    def ask(self, names: Collection[str]) -> None:
        """The hosts whose GPUs the next polls read (at most MAX_HOSTS of them)."""
        known = self._known
        by_label: dict[str, set[str]] = {label: set() for label in HOST_LABELS}
        for name in sorted(names)[:MAX_HOSTS]:
            host = known.get(name)
            # A host's label is not in the summary: each name is matched under the label
            # that names hosts (Hostname, 4.x's hostname) and, for hosts named by their
            # scrape target, under instance.
            if host is not None and name in host.instances:
                by_label["instance"].add(name)
            else:
                by_label["Hostname"].add(name)
                by_label["hostname"].add(name)
        self.detail.hosts = {k: frozenset(v) for k, v in by_label.items()}

    def poll(self, first: int = 0) -> ViewData:
        """One refresh; `first`: with no hosts asked yet, the GPUs of the first hosts by name
        are read (the view's first screenful, before it knows any host)."""
        before = self.client.requests
        now = self.source.clock()
        self._scrape_intervals(now)
        answer = [s for expr in self.query.exprs() for s in self.client.query(expr, at=now)]
        hosts = summarise(answer, now, intervals=self._intervals, known=self._known)
        up = [s for s in answer if s.labels.get("stat") == "up"]
        self._known = {h.name: h for h in hosts}
        if first and not any(self.detail.hosts.values()):
            self.ask([h.name for h in hosts[:first]])
        asked = set().union(*self.detail.hosts.values())
        self.detail._known = {k: v for k, v in self.detail._known.items() if k in asked}
        detail = self.detail.poll_hosts(up)
        detail = ClusterSnapshot(
            detail.timestamp, detail.url, tuple(h for h in detail.hosts if h.name in asked)
        )
        return ViewData(
            hosts,
            detail,
            self.client.requests - before,
            self.scrape_interval(hosts),
            user_totals(answer),
        )

    def scrape_interval(self, hosts: tuple[HostSummary, ...]) -> float | None:
        mine = {i for h in hosts for i in h.instances}
        seconds = [s for i, s in self._intervals.items() if i in mine]
        return min(seconds) if seconds else None

    def history(
        self, metric: str, seconds: float, points: int
    ) -> dict[tuple[str, int], list[float]]:
        """The range query of the asked hosts only."""
        if not any(self.detail.hosts.values()):
            return {}
        return self.detail.history(metric, seconds, points)
