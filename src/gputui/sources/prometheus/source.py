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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from gputui.core.textsafe import visible
from gputui.model.snapshot import (
    DeviceInfo,
    DeviceSample,
    DeviceSnapshot,
    GpuProcess,
    HostSnapshot,
    Snapshot,
)
from gputui.sources.prometheus.api import (
    PrometheusBadResponse,
    PrometheusClient,
    PrometheusRequestError,
    RangeSeries,
    Sample,
)
from gputui.sources.prometheus.bounds import bounded, index_label, timestamp

MIB = 1 << 20
HostState = Literal["up", "stale", "down"]
DEFAULT_SCRAPE_INTERVAL_S = 60.0  # Prometheus' own default when the targets API says nothing
TARGETS_EVERY_S = 60.0

# DeviceSample field <- metric, with the factor to gputui's units (bytes, W, MHz, %).
SAMPLE_METRICS: dict[str, tuple[str, float]] = {
    "DCGM_FI_DEV_GPU_UTIL": ("utilization_gpu", 1.0),
    "DCGM_FI_DEV_MEM_COPY_UTIL": ("utilization_memory", 1.0),
    "DCGM_FI_DEV_FB_USED": ("memory_used", MIB),
    "DCGM_FI_DEV_FB_FREE": ("memory_free", MIB),
    "DCGM_FI_DEV_FB_RESERVED": ("memory_reserved", MIB),
    "DCGM_FI_DEV_GPU_TEMP": ("temperature_c", 1.0),
    "DCGM_FI_DEV_POWER_USAGE": ("power_w", 1.0),
    "DCGM_FI_DEV_SM_CLOCK": ("sm_clock_mhz", 1.0),
    "DCGM_FI_DEV_MEM_CLOCK": ("mem_clock_mhz", 1.0),
    "DCGM_FI_DEV_ENC_UTIL": ("encoder_util", 1.0),
    "DCGM_FI_DEV_DEC_UTIL": ("decoder_util", 1.0),
    "DCGM_FI_DEV_PCIE_TX_THROUGHPUT": ("pcie_tx_kbs", 1.0),
    "DCGM_FI_DEV_PCIE_RX_THROUGHPUT": ("pcie_rx_kbs", 1.0),
    "gputui_gpu_fan_percent": ("fan_pct", 1.0),
    "gputui_gpu_power_limit_watts": ("power_limit_w", 1.0),
    "gputui_gpu_memory_total_bytes": ("memory_total", 1.0),
    "gputui_gpu_performance_state": ("performance_state", 1.0),
}
_FLOAT_FIELDS = {"power_w", "power_limit_w"}
GPU_UP = "gputui_gpu_up"
CARD_INFO = "gputui_gpu_card_info"
THROTTLE = "gputui_gpu_throttle_reason"
PROC_MEMORY = "gputui_process_gpu_memory_bytes"
PROC_SM = "gputui_process_sm_util_percent"
LAST_POLL = "gputui_exporter_last_poll_timestamp_seconds"
POLL_INTERVAL = "gputui_exporter_poll_interval_seconds"
# Labelled extras, read with all their labels in one query (only gputui exporters have them).
LABELLED_METRICS: tuple[str, ...] = (CARD_INFO, THROTTLE, PROC_MEMORY, PROC_SM, LAST_POLL, POLL_INTERVAL)
# What the cluster view draws; one-shot commands (snapshot, fit) read every SAMPLE_METRICS field.
VIEW_METRICS: tuple[str, ...] = (
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_FB_RESERVED",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",
    "gputui_gpu_memory_total_bytes",
    "gputui_gpu_power_limit_watts",
)
VALUE_METRICS: tuple[str, ...] = (*SAMPLE_METRICS, GPU_UP, *LABELLED_METRICS)
# A value query keeps only what joins it to its GPU: the rest of the labels come once, from
# the identity query, instead of once per metric (at 512 GPUs that is most of the bytes).
JOIN_LABELS = "Hostname, hostname, instance, gpu"
IDENTITY_LABELS = f"{JOIN_LABELS}, modelName, UUID, uuid, pci_bus_id"


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
        raise PrometheusRequestError(f"--match {text!r}: expected label matchers like job=\"gpu\"")
    return inner


def host_of(labels: dict[str, str]) -> str:
    return visible(
        labels.get("Hostname") or labels.get("hostname") or labels.get("instance") or "unknown"
    )


def uuid_of(labels: dict[str, str]) -> str | None:
    value = labels.get("UUID") or labels.get("uuid")
    return visible(value) if value else None


def _gpu_index(labels: dict[str, str]) -> int | None:
    return index_label(labels.get("gpu"))


@dataclass(frozen=True, slots=True)
class ClusterGpu:
    host: str
    index: int
    name: str
    uuid: str | None
    pci_bus_id: str | None
    sample: DeviceSample | None  # None when the GPU is lost (gputui_gpu_up 0)
    up: bool
    last_seen: float | None  # newest sample's timestamp
    card: str | None = None
    architecture: str | None = None
    throttle_reasons: tuple[str, ...] | None = None

    @property
    def key(self) -> tuple[str, int]:
        return (self.host, self.index)

    @property
    def memory_total(self) -> int | None:
        s = self.sample
        if s is None:
            return None
        if s.memory_total is not None:
            return s.memory_total
        if s.memory_used is not None and s.memory_free is not None:
            return s.memory_used + s.memory_free + (s.memory_reserved or 0)
        return None

    def device_snapshot(self) -> DeviceSnapshot:
        info = DeviceInfo(
            index=self.index,
            name=self.name,
            uuid=self.uuid,
            pci_bus_id=self.pci_bus_id,
            memory_total=self.memory_total,
            architecture=self.architecture,
        )
        sample = self.sample
        if sample is not None and sample.memory_total is None:
            sample = replace(sample, memory_total=self.memory_total)
        if sample is not None and self.throttle_reasons is not None:
            sample = replace(sample, throttle_reasons=self.throttle_reasons)
        return DeviceSnapshot(info, sample, None if self.up else "GPU is lost")


@dataclass(frozen=True, slots=True)
class ClusterHost:
    name: str
    gpus: tuple[ClusterGpu, ...]
    processes: tuple[GpuProcess, ...] = ()
    state: HostState = "up"
    last_seen: float | None = None
    age_s: float | None = None
    instances: tuple[str, ...] = ()
    exporters: tuple[str, ...] = ()  # "dcgm", "gputui"
    simulated: bool = False  # a gputui exporter serving simulated GPUs

    def snapshot(self, timestamp: float) -> Snapshot:
        """This host as a plain Snapshot (what fit's targets and the JSON output take)."""
        return Snapshot(
            timestamp=self.last_seen or timestamp,
            source="prometheus",
            devices=tuple(g.device_snapshot() for g in self.gpus),
            processes=self.processes,
            host=HostSnapshot(hostname=self.name),
        )


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    timestamp: float
    url: str
    hosts: tuple[ClusterHost, ...]
    requests: int = 0  # HTTP requests this refresh made
    notices: tuple[str, ...] = field(default=())

    @property
    def gpus(self) -> tuple[ClusterGpu, ...]:
        return tuple(g for h in self.hosts for g in h.gpus)


class _GpuBuilder:
    __slots__ = ("host", "index", "name", "uuid", "pci", "values", "up", "card", "arch", "throttle")

    def __init__(self, host: str, index: int) -> None:
        self.host = host
        self.index = index
        self.name: str | None = None
        self.uuid: str | None = None
        self.pci: str | None = None
        self.values: dict[str, float] = {}
        self.up: bool | None = None
        self.card: str | None = None
        self.arch: str | None = None
        self.throttle: set[str] | None = None

    def labels(self, labels: dict[str, str]) -> None:
        if self.name is None and labels.get("modelName"):
            self.name = visible(labels["modelName"])
        if self.uuid is None:
            self.uuid = uuid_of(labels)
        if self.pci is None and labels.get("pci_bus_id"):
            self.pci = visible(labels["pci_bus_id"])

    def build(self, last_seen: float | None) -> ClusterGpu:
        up = self.up is not False
        sample = None
        if up:
            kwargs: dict[str, float | int] = {}
            for metric, (attr, scale) in SAMPLE_METRICS.items():
                value = self.values.get(metric)
                if value is None:
                    continue
                value *= scale
                kwargs[attr] = value if attr in _FLOAT_FIELDS else int(round(value))
            sample = DeviceSample(**kwargs)  # type: ignore[arg-type]
        return ClusterGpu(
            host=self.host,
            index=self.index,
            name=self.name or "unknown GPU",
            uuid=self.uuid,
            pci_bus_id=self.pci,
            sample=sample,
            up=up,
            last_seen=last_seen,
            card=self.card,
            architecture=self.arch,
            throttle_reasons=tuple(sorted(self.throttle)) if self.throttle is not None else None,
        )


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


class PrometheusSource:
    """Reads the fleet from one Prometheus server; blocking, one refresh at a time."""

    name = "prometheus"

    def __init__(
        self,
        url: str,
        *,
        match: str | None = None,
        metrics: Sequence[str] | None = None,
        timeout: float = 5.0,
        clock: Callable[[], float] = time.time,
        client: PrometheusClient | None = None,
    ) -> None:
        self.client = client or PrometheusClient(url, timeout=timeout)
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
        return f"max by ({JOIN_LABELS}) ({self.selector(name)})"

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
        if self._intervals_at is None or now - self._intervals_at >= TARGETS_EVERY_S:
            try:
                self._intervals = self.client.scrape_intervals()
            except PrometheusBadResponse:
                raise  # an answer, but a broken one: as for any other query
            except PrometheusRequestError:
                self._intervals = {}  # an API without /targets (e.g. a proxy): use the default
            self._intervals_at = now
        fresh = self.client.query(self.freshness_query(), at=now)
        values: list[Sample] = []
        for name in (*self.metrics, GPU_UP):
            for sample in self.client.query(self.metric_query(name), at=now):
                sample.labels["__name__"] = name
                values.append(sample)
        values += self.client.query(self.labelled_query(), at=now)
        up = self.client.query("up", at=now)
        hosts = self._assemble(values, fresh, up, now)
        return ClusterSnapshot(now, self.url, hosts, self.client.requests - before)

    def poll(self) -> Snapshot:
        """The Source protocol: every GPU of the fleet in one Snapshot, renumbered 0..n-1.

        Loses the host boundaries (use poll_cluster for views); kept so generic
        code that takes a Source (JSON dumps, fit targets) works on a cluster.
        """
        cluster = self.poll_cluster()
        devices = []
        for i, gpu in enumerate(cluster.gpus):
            d = gpu.device_snapshot()
            devices.append(replace(d, info=replace(d.info, index=i, name=f"{gpu.host}/{d.info.name}")))
        return Snapshot(cluster.timestamp, "prometheus", tuple(devices))

    def close(self) -> None:
        pass

    # --- assembling ---------------------------------------------------------------
    def _assemble(
        self, values: Sequence[Sample], fresh: Sequence[Sample], up: Sequence[Sample], now: float
    ) -> tuple[ClusterHost, ...]:
        gpus: dict[tuple[str, int], _GpuBuilder] = {}
        host_instances: dict[str, set[str]] = {}
        simulated: set[str] = set()
        procs: dict[tuple[str, int, int], dict[str, object]] = {}
        last_poll: dict[str, float] = {}
        poll_interval: dict[str, float] = {}
        gputui_instances = {
            s.labels.get("instance", "")
            for s in values
            if s.labels.get("__name__", "").startswith("gputui_")
        }
        self._gputui_instances = gputui_instances

        def order(s: Sample) -> tuple[bool, str]:
            """A GPU seen through gputui and dcgm-exporter takes gputui's values first."""
            instance = s.labels.get("instance", "")
            return (instance not in gputui_instances, instance)

        for s in sorted(fresh, key=order):
            index = _gpu_index(s.labels)
            if index is None:
                continue
            host = host_of(s.labels)
            b = gpus.get((host, index))
            if b is None:
                b = gpus[(host, index)] = _GpuBuilder(host, index)
            b.labels(s.labels)
            if s.labels.get("instance"):
                host_instances.setdefault(host, set()).add(s.labels["instance"])
        for s in sorted(values, key=order):
            name = s.labels.get("__name__", "")
            host = host_of(s.labels)
            instance = s.labels.get("instance")
            if name == LAST_POLL:
                if not math.isnan(polled_at := bounded(name, s.value)):
                    who = _instance_host(s.labels)
                    last_poll[who] = max(last_poll.get(who, 0.0), polled_at)
                if s.labels.get("source") == "simulated":
                    simulated.add(_instance_host(s.labels))
                continue
            if name == POLL_INTERVAL:
                if not math.isnan(every := bounded(name, s.value)):
                    poll_interval[_instance_host(s.labels)] = every
                continue
            index = _gpu_index(s.labels)
            if index is None:
                continue
            if instance:
                host_instances.setdefault(host, set()).add(instance)
            if name in (PROC_MEMORY, PROC_SM):
                self._add_process(procs, host, index, name, s)
                continue
            b = gpus.get((host, index))
            if b is None:
                b = gpus[(host, index)] = _GpuBuilder(host, index)
            b.labels(s.labels)
            if name == GPU_UP:
                if not math.isnan(s.value):
                    b.up = bool(b.up) or s.value >= 1.0  # up through any exporter is up
            elif name == CARD_INFO:
                b.card = b.card or visible(s.labels.get("card", "")) or None
                b.arch = b.arch or visible(s.labels.get("architecture", "")) or None
            elif name == THROTTLE:
                if not math.isnan(s.value):
                    b.throttle = b.throttle or set()
                    if s.value >= 1.0:
                        b.throttle.add(visible(s.labels.get("reason", "?")))
            elif not math.isnan(value := bounded(name, s.value)) and name not in b.values:
                b.values[name] = value
        newest: dict[tuple[str, int], float] = {}
        for s in fresh:
            index = _gpu_index(s.labels)
            if index is None or math.isnan(seen_at := timestamp(s.value)):
                continue
            gpu_key = (host_of(s.labels), index)
            newest[gpu_key] = max(newest.get(gpu_key, 0.0), seen_at)
        down_instances = {
            s.labels.get("instance", "") for s in up if not math.isnan(s.value) and s.value < 1
        }
        by_host: dict[str, list[ClusterGpu]] = {}
        for gpu_key, b in sorted(gpus.items()):
            by_host.setdefault(gpu_key[0], []).append(b.build(newest.get(gpu_key)))
        hosts: list[ClusterHost] = []
        for name, host_gpus in by_host.items():
            instances = tuple(sorted(host_instances.get(name, ())))
            seen = [g.last_seen for g in host_gpus if g.last_seen is not None]
            last = max(seen) if seen else None
            polled = [last_poll[k] for k in (name, *instances) if k in last_poll]
            if polled and last is not None:
                last = min(last, max(polled))  # a stuck gputui poller serves old numbers
            interval = max((self._intervals.get(i, 0.0) for i in instances), default=0.0)
            interval = interval or DEFAULT_SCRAPE_INTERVAL_S
            exporter_interval = max(
                (poll_interval[k] for k in (name, *instances) if k in poll_interval), default=0.0
            )
            limit = 2 * max(interval, exporter_interval)
            age = now - last if last is not None else None
            state: HostState = "up"
            if instances and all(i in down_instances for i in instances):
                state = "down"
            elif age is not None and age > limit:
                state = "stale"
            hosts.append(
                ClusterHost(
                    name=name,
                    gpus=tuple(host_gpus),
                    processes=self._processes(procs, name),
                    state=state,
                    last_seen=last,
                    age_s=age,
                    instances=instances,
                    exporters=tuple(
                        sorted({"gputui" if i in gputui_instances else "dcgm" for i in instances})
                    ),
                    simulated=name in simulated or any(i in simulated for i in instances),
                )
            )
        current = {h.name for h in hosts}
        for name, old in self._known.items():
            if name in current:
                continue
            # Its series vanished (stale markers after failed scrapes, or the target left):
            # keep the last numbers, marked down, until the target itself is gone from `up`.
            if old.instances and not any(
                s.labels.get("instance") in old.instances for s in up
            ):
                continue
            age = now - old.last_seen if old.last_seen is not None else None
            hosts.append(replace(old, state="down", age_s=age))
        hosts.sort(key=lambda h: h.name)
        self._known = {h.name: h for h in hosts}
        return tuple(hosts)

    @staticmethod
    def _add_process(
        procs: dict[tuple[str, int, int], dict[str, object]],
        host: str,
        index: int,
        name: str,
        s: Sample,
    ) -> None:
        pid = index_label(s.labels.get("pid"))
        if pid is None:
            return
        entry = procs.setdefault((host, index, pid), {"labels": s.labels})
        if not math.isnan(value := bounded(name, s.value)):
            entry[name] = value

    @staticmethod
    def _processes(
        procs: dict[tuple[str, int, int], dict[str, object]], host: str
    ) -> tuple[GpuProcess, ...]:
        out = []
        for (h, index, pid), entry in sorted(procs.items()):
            if h != host:
                continue
            labels = entry["labels"]
            assert isinstance(labels, dict)
            memory = entry.get(PROC_MEMORY)
            sm = entry.get(PROC_SM)
            cmdline = labels.get("cmdline")
            out.append(
                GpuProcess(
                    gpu_index=index,
                    pid=pid,
                    type="compute",
                    gpu_memory=int(memory) if isinstance(memory, float) else None,
                    sm_util=int(sm) if isinstance(sm, float) else None,
                    user=visible(labels.get("user", "")) or None,
                    name=visible(labels.get("command", "")) or None,
                    cmdline=tuple(visible(cmdline).split()) if cmdline else None,
                    container=visible(labels.get("container", "")) or None,
                )
            )
        return tuple(out)

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

        def order(s: RangeSeries) -> tuple[bool, str]:
            instance = s.labels.get("instance", "")
            return (instance not in gputui, instance)

        for s in sorted(series, key=order):
            index = _gpu_index(s.labels)
            if index is None:
                continue
            key = (host_of(s.labels), index)
            if key in out:
                continue  # the same GPU through a second exporter (a mix)
            out[key] = [v for _, v in s.points if not math.isnan(bounded(metric, v))]
        return out


def _instance_host(labels: dict[str, str]) -> str:
    """Exporter-level series (no gpu label) join hosts by Hostname when given, else instance."""
    return labels.get("Hostname") or labels.get("hostname") or labels.get("instance", "")


def fleet_targets(cluster: ClusterSnapshot, catalog: Any) -> list[tuple[ClusterHost, Any]]:
    """(host, fit Target) for every GPU that is up and reports its free memory."""
    from gputui.catalog import Catalog
    from gputui.fit.targets import targets_from_snapshot

    assert isinstance(catalog, Catalog)
    out: list[tuple[ClusterHost, Any]] = []
    for host in cluster.hosts:
        if host.state == "down":
            continue
        for target in targets_from_snapshot(host.snapshot(cluster.timestamp), catalog):
            if target.memory_free is not None:
                out.append((host, target))
    return out


def summarise(values: Iterable[float]) -> tuple[float | None, float | None]:
    """(mean, max) of the values, (None, None) when there are none."""
    vals = [v for v in values if not math.isnan(v)]
    if not vals:
        return None, None
    return sum(vals) / len(vals), max(vals)
