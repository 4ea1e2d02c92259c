"""The cluster source: a whole fleet's GPUs read from a Prometheus server.

What it reads: series under dcgm-exporter's names (from dcgm-exporter itself
or from `gputui exporter`) and gputui's own extras (processes, memory total,
power limit, the catalog card, liveness of each GPU and of the exporter).

How: a fixed number of requests per refresh, whatever the number of hosts:
one query per GPU metric for the whole fleet (`max by (Hostname, hostname,
instance, gpu) (M{matchers})`: values without their repeated labels), one for
every GPU's identity labels and newest sample time (staleness), one for
gputui's labelled extras (processes, card, throttle reasons, exporter
health), one for `up` (which scrape targets are down), plus /api/v1/targets
(scrape intervals) once a minute and the sparklines' range query when asked.
Never one query per host.

Labels: `Hostname` (dcgm-exporter before 4.x, gputui) and `hostname` (4.x);
`UUID` and the old lowercase `uuid`. A series with neither host label is
named by its scrape `instance`. A host exporting through both dcgm-exporter
and gputui (a mix) is one host; its GPUs are merged by (host, gpu index),
gputui's values first (the same poll for every field), dcgm-exporter's
filling what gputui lacks.

States: a host is `stale` when its newest sample is older than two scrape
intervals (or a gputui exporter's last poll is), `down` when its target's
`up` is 0 or its series vanished since the last refresh. NaN values are
treated as missing, like an unsupported field.

No Textual here; `poll_cluster()` blocks and runs off the UI thread.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from gputui.model.cluster import ClusterHost, ClusterSnapshot
from gputui.model.snapshot import Snapshot
from gputui.sources.base import Source
from gputui.sources.prometheus.api import (
    CommandDeadline,
    PrometheusBadResponse,
    PrometheusClient,
    PrometheusRequestError,
    Sample,
)
from gputui.sources.prometheus.assemble import assemble, gputui_instances_of
from gputui.sources.prometheus.bounds import bounded
from gputui.sources.prometheus.series import (
    GPU_UP,
    IDENTITY_LABELS,
    LABELLED_METRICS,
    SAMPLE_METRICS,
    gpu_index,
    gputui_first,
    host_of,
    join_labels,
)

TARGETS_EVERY_S = 60.0
CONCURRENT_QUERIES = 4  # in flight at once: a refresh's latency, not a load on Prometheus
T = TypeVar("T")


def run_all(calls: Sequence[Callable[[], T]]) -> list[T]:
    """Every call's result, in order, CONCURRENT_QUERIES at a time (the queries of a refresh
    are independent; each has its deadline, and the command's bounds them all). The first
    failure in order is raised once every call has ended (none left running)."""
    if len(calls) <= 1:
        return [call() for call in calls]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(CONCURRENT_QUERIES, len(calls))) as pool:
        futures = [pool.submit(call) for call in calls]
    return [f.result() for f in futures]


def parse_selector(text: str | None) -> str:
    """`--match`: label matchers, with or without braces; returned without braces.

    Only the shape is checked here (a metric name in front is refused, since
    the selector applies to every metric); Prometheus checks the matchers
    themselves on the first query, and its answer is the one-line error.
    """
    if text is None:
        return ""
    inner = text.strip()
    if inner.startswith("{") and inner.endswith("}"):
        inner = inner[1:-1].strip()
    elif "{" in inner or "}" in inner:
        raise PrometheusRequestError(
            f"--match {text!r}: give label matchers only, e.g. '{{cluster=\"a\"}}' or "
            "'Hostname=~\"gpu-.*\"' (it applies to every metric)"
        )
    if inner and not any(op in inner for op in ("=", "!=", "=~", "!~")):
        raise PrometheusRequestError(f'--match {text!r}: expected label matchers like job="gpu"')
    return inner


class Backoff:
    """Retry delays after failures: base, 2x, 4x ... capped; reset by a success."""

    def __init__(self, base: float, cap: float = 30.0) -> None:
        self.base = base
        self.cap = max(cap, base)
        self.failures = 0

    def success(self) -> None:
        self.failures = 0

    def failure(self) -> float:
        self.failures += 1
        return self.delay()

    def delay(self) -> float:
        if self.failures == 0:
            return self.base
        return float(min(self.cap, self.base * 2 ** min(self.failures, 16)))


class PrometheusSource(Source):
    """Reads the fleet from one Prometheus server; blocking, one refresh at a time."""

    name = "prometheus"

    @classmethod
    def from_options(cls, options: Mapping[str, object]) -> PrometheusSource:
        """`--source prometheus` (sources/registry.py): `--prometheus URL [--match SELECTOR]`,
        checked by one query (a bad selector is an error before any view opens)."""
        match = options.get("match")
        source = cls(str(options["prometheus"]), match=None if match is None else str(match))
        source.check()
        return source

    def __init__(
        self,
        url: str,
        *,
        match: str | None = None,
        metrics: Sequence[str] | None = None,
        timeout: float | None = None,  # None: the client's deadline per query
        clock: Callable[[], float] = time.time,
        client: PrometheusClient | None = None,
        deadline: CommandDeadline | None = None,
    ) -> None:
        self.client = client or PrometheusClient(url, timeout=timeout, deadline=deadline)
        self.url = self.client.url
        self.matchers = parse_selector(match)
        self.metrics = tuple(metrics) if metrics is not None else tuple(SAMPLE_METRICS)
        unknown = [m for m in self.metrics if m not in SAMPLE_METRICS]
        if unknown:
            raise ValueError(f"not a GPU field metric: {unknown[0]}")
        self.clock = clock
        self._intervals: dict[str, float] = {}
        self._intervals_at: float | None = None
        self._known: dict[str, ClusterHost] = {}
        self._gputui_instances: set[str] = set()

    # --- queries ------------------------------------------------------------------
    def selector(self, name: str | None = None) -> str:
        parts = [f'__name__="{name}"'] if name else []
        if self.matchers:
            parts.append(self.matchers)
        return "{" + ", ".join(parts) + "}"

    def metric_query(self, name: str) -> str:
        """One metric for the whole fleet, one series per GPU and scrape target."""
        return f"max by ({join_labels(name)}) ({self.selector(name)})"

    def labelled_query(self) -> str:
        names = "|".join(LABELLED_METRICS)
        inner = f'__name__=~"{names}"' + (f", {self.matchers}" if self.matchers else "")
        return "{" + inner + "}"

    def freshness_query(self) -> str:
        """Every GPU's identity labels and its newest sample's time, in one query.

        FB_USED is a dcgm-exporter default counter and gputui exports it too;
        gputui_gpu_up covers a lost GPU, which exports nothing else. `or` keeps
        one of the two where both exist, so no label set repeats.
        """
        return (
            f"max by ({IDENTITY_LABELS}) (timestamp({self.selector('DCGM_FI_DEV_FB_USED')}) "
            f"or timestamp({self.selector(GPU_UP)}))"
        )

    def check(self) -> None:
        """One cheap query, so a bad selector is reported before any view opens."""
        try:
            self.client.query(f"count({self.selector(GPU_UP)}) or vector(0)")
        except PrometheusRequestError as exc:
            if not self.matchers or not exc.reason.startswith("bad query"):
                raise
            detail = exc.reason.split(": ", 1)[-1]
            raise PrometheusRequestError(f"--match {{{self.matchers}}}: {detail}") from None

    # --- the refresh --------------------------------------------------------------
    def poll_cluster(self) -> ClusterSnapshot:
        before = self.client.requests
        now = self.clock()
        want_intervals = self._intervals_at is None or now - self._intervals_at >= TARGETS_EVERY_S
        names = (*self.metrics, GPU_UP)

        def query(expr: str) -> Callable[[], list[Sample]]:
            return lambda: self.client.query(expr, at=now)

        calls: list[Callable[[], Any]] = [
            query(self.freshness_query()),
            query(self.labelled_query()),
            query("up"),
            *(query(self.metric_query(name)) for name in names),
        ]
        if want_intervals:
            calls.append(self._scrape_intervals)
        with self.client.side_by_side(min(CONCURRENT_QUERIES, len(calls))):
            fresh, labelled, up, *answers = run_all(calls)
        if want_intervals:
            self._intervals = answers.pop()
            self._intervals_at = now
        values: list[Sample] = []
        for name, samples in zip(names, answers, strict=True):
            for sample in samples:
                sample.labels["__name__"] = name
            values += samples
        values += labelled
        return self._assembled(values, fresh, up, now, before)

    def _scrape_intervals(self) -> dict[str, float]:
        try:
            return self.client.scrape_intervals()
        except PrometheusBadResponse:
            raise  # an answer, but a broken one: as for any other query
        except PrometheusRequestError:
            return {}  # an API without /targets (e.g. a proxy): use the default

    def _assembled(
        self,
        values: Sequence[Sample],
        fresh: Sequence[Sample],
        up: Sequence[Sample],
        now: float,
        requests_before: int,
    ) -> ClusterSnapshot:
        """One refresh's hosts from its answers; the next refresh's `known` hosts kept."""
        self._gputui_instances = gputui_instances_of(values)
        hosts = assemble(
            values,
            fresh,
            up,
            now,
            intervals=self._intervals,
            known=self._known,
            gputui_instances=self._gputui_instances,
        )
        self._known = {h.name: h for h in hosts}
        return ClusterSnapshot(now, self.url, hosts, self.client.requests - requests_before)

    def poll(self) -> Snapshot:
        """The Source protocol: every GPU of the fleet in one Snapshot, renumbered 0..n-1.

        Loses the host boundaries (use poll_cluster for views); kept so generic
        code that takes a Source (JSON dumps, fit targets) works on a cluster.
        """
        cluster = self.poll_cluster()
        down = {h.name for h in cluster.hosts if h.state == "down"}
        devices = []
        for i, gpu in enumerate(cluster.gpus):
            d = gpu.device_snapshot()
            if gpu.host in down:  # its last numbers are history, not a reading
                d = replace(d, sample=None, failed="GPU is lost: its host is down")
            devices.append(
                replace(d, info=replace(d.info, index=i, name=f"{gpu.host}/{d.info.name}"))
            )
        return Snapshot(cluster.timestamp, "prometheus", tuple(devices))

    def close(self) -> None:
        pass

    # --- history ------------------------------------------------------------------
    def history(
        self, metric: str, seconds: float, points: int = 60
    ) -> dict[tuple[str, int], list[float]]:
        """One range query for the whole fleet: values per (host, gpu), NaN and gaps dropped."""
        end = self.clock()
        step = max(1.0, seconds / points)
        series = self.client.query_range(self.metric_query(metric), end - seconds, end, step)
        out: dict[tuple[str, int], list[float]] = {}
        gputui = self._gputui_instances  # as in poll_cluster: a mixed host's gputui series first
        for s in sorted(series, key=lambda s: gputui_first(s.labels, gputui)):
            index = gpu_index(s.labels)
            if index is None:
                continue
            key = (host_of(s.labels), index)
            if key in out:
                continue  # the same GPU through a second exporter (a mix)
            out[key] = [v for _, v in s.points if not math.isnan(bounded(metric, v))]
        return out
