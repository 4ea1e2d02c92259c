"""The cluster view's host table, aggregated by Prometheus: one query, one series per host figure.

Why: reading every GPU's series to draw one row per host makes the view's
cost (and Prometheus') grow with the GPUs of the fleet; here Prometheus does
the sums and the view parses a few series per host. The query is one
PromQL expression, each figure tagged with a `stat` label and joined by `or`:

- the host is `Hostname`, else `hostname` (dcgm-exporter 4.x), else the
  scrape `instance`, as host_of names it (label_replace into `gputui_host`);
- a GPU seen through gputui and dcgm-exporter (a mixed host) counts once,
  gputui's value first, as in assemble.py;
- a value outside its metric's bounds (bounds.py) is left out, as the
  per-GPU reader treats it as missing;
- a GPU is one with FB_USED or gputui_gpu_up, the same as the per-GPU
  reader's freshness query.

States follow assemble.py: `down` when every target of the host has `up` 0
or its series vanished while its target is listed, `stale` when its newest
sample is older than two scrape (or exporter poll) intervals.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from gputui.core.textsafe import visible
from gputui.model.cluster import HostState
from gputui.model.cluster_summary import HostSummary
from gputui.sources.prometheus.api import Sample
from gputui.sources.prometheus.assemble import DEFAULT_SCRAPE_INTERVAL_S
from gputui.sources.prometheus.bounds import METRIC_BOUNDS, bounded, index_label, timestamp
from gputui.sources.prometheus.series import GPU_UP, LAST_POLL, MIB, POLL_INTERVAL

HOST = "gputui_host"
GPU_INDEX = 'gpu=~"[0-9]{1,9}"'  # what index_label takes: a series with another gpu is not a GPU
UTIL = "DCGM_FI_DEV_GPU_UTIL"
USED = "DCGM_FI_DEV_FB_USED"
FREE = "DCGM_FI_DEV_FB_FREE"
RESERVED = "DCGM_FI_DEV_FB_RESERVED"
TEMP = "DCGM_FI_DEV_GPU_TEMP"
POWER = "DCGM_FI_DEV_POWER_USAGE"
TOTAL = "gputui_gpu_memory_total_bytes"


def hosted(expr: str) -> str:
    """`expr` with the host's name in `gputui_host`: Hostname, else hostname, else instance."""
    for label in ("instance", "hostname", "Hostname"):
        expr = f'label_replace({expr}, "{HOST}", "$1", "{label}", "(.+)")'
    return expr


class SummaryQuery:
    """The one expression for the host table, under the view's `--match` matchers."""

    def __init__(self, matchers: str = "") -> None:
        self.matchers = matchers

    def sel(self, name: str, *, gpu: bool = True) -> str:
        parts = [f'__name__="{name}"']
        if gpu:
            parts.append(GPU_INDEX)
        if self.matchers:
            parts.append(self.matchers)
        return "{" + ", ".join(parts) + "}"

    def bounded_sel(self, name: str) -> str:
        lo, hi = METRIC_BOUNDS[name]
        return f"({self.sel(name)} >= {lo:g} <= {hi:g})"

    def per_gpu(self, name: str) -> str:
        """One value per (host, gpu): a gputui exporter's where it serves the GPU, else any."""
        h = hosted(self.bounded_sel(name))
        gputui = f"group by (instance) ({self.sel(GPU_UP)})"
        by = f"max by ({HOST}, gpu)"
        return f"({by} ({h} and on (instance) {gputui}) or {by} ({h}))"

    def stats(self) -> dict[str, str]:
        g = self.per_gpu
        gpus = f"max by ({HOST}, gpu) ({hosted(self.sel(USED))} or {hosted(self.sel(GPU_UP))})"
        reserved = f"({g(RESERVED)} or {g(USED)} * 0)"
        total = f"({g(TOTAL)} or ({g(USED)} + {g(FREE)} + {reserved}) * {MIB})"
        seen = f"timestamp({self.sel(USED)}) or timestamp({self.sel(GPU_UP)})"
        return {
            "gpus": f"count by ({HOST}) ({gpus})",
            "lost": f"count by ({HOST}) (max by ({HOST}, gpu) ({hosted(self.sel(GPU_UP))}) < 1)",
            "util_mean": f"avg by ({HOST}) ({g(UTIL)})",
            "util_max": f"max by ({HOST}) ({g(UTIL)})",
            "used": f"sum by ({HOST}) ({g(USED)})",
            "total": f"sum by ({HOST}) ({total})",
            "hottest": f"{g(TEMP)} == on ({HOST}) group_left max by ({HOST}) ({g(TEMP)})",
            "power": f"sum by ({HOST}) ({g(POWER)})",
            "seen": f"max by ({HOST}, instance) ({hosted(seen)})",
            "last_poll": f"max by ({HOST}, instance, source) ({hosted(self.sel(LAST_POLL, gpu=False))})",
            "poll_every": f"max by ({HOST}, instance) ({hosted(self.sel(POLL_INTERVAL, gpu=False))})",
            "gputui": f"group by (instance) ({self.sel(GPU_UP)} or {self.sel(LAST_POLL, gpu=False)})",
            "up": "up",
        }

    def expr(self) -> str:
        tagged = [f'label_replace({e}, "stat", "{k}", "", "")' for k, e in self.stats().items()]
        return " or ".join(tagged)


class _Host:
    __slots__ = ("figures", "hottest", "instances", "seen", "polled", "poll_every", "simulated")

    def __init__(self) -> None:
        self.figures: dict[str, float] = {}
        self.hottest: tuple[float, int] | None = None
        self.instances: set[str] = set()
        self.seen: float | None = None
        self.polled: float | None = None
        self.poll_every = 0.0
        self.simulated = False


def summarise(
    samples: Sequence[Sample],
    now: float,
    *,
    intervals: Mapping[str, float],
    known: Mapping[str, HostSummary],
) -> tuple[HostSummary, ...]:
    """The hosts of one answer to SummaryQuery.expr(); `known`: the last refresh's (a host
    whose series vanished is kept, marked down, while its target is listed in `up`)."""
    hosts: dict[str, _Host] = {}
    gputui: set[str] = set()
    up: dict[str, float] = {}
    for s in samples:
        stat = s.labels.get("stat", "")
        if stat == "up":
            up[s.labels.get("instance", "")] = s.value
            continue
        if stat == "gputui":
            gputui.add(s.labels.get("instance", ""))
            continue
        name = visible(s.labels.get(HOST, ""))
        if not name:
            continue
        h = hosts.setdefault(name, _Host())
        instance = s.labels.get("instance")
        if stat == "seen":
            if instance:
                h.instances.add(instance)
            if not math.isnan(at := timestamp(s.value)):
                h.seen = max(h.seen or 0.0, at)
        elif stat == "last_poll":
            if not math.isnan(at := bounded(LAST_POLL, s.value)):
                h.polled = max(h.polled or 0.0, at)
            h.simulated = h.simulated or s.labels.get("source") == "simulated"
        elif stat == "poll_every":
            if not math.isnan(every := bounded(POLL_INTERVAL, s.value)):
                h.poll_every = max(h.poll_every, every)
        elif stat == "hottest":
            index = index_label(s.labels.get("gpu"))
            if index is not None and not math.isnan(s.value):
                h.hottest = max(h.hottest or (s.value, index), (s.value, index))
        elif not math.isnan(s.value):
            h.figures[stat] = s.value
    out = [
        _host(name, h, now, intervals, gputui, up)
        for name, h in hosts.items()
        if "gpus" in h.figures
    ]
    current = {h.name for h in out}
    for name, old in known.items():
        if name in current or not any(i in up for i in old.instances):
            continue
        age = now - old.last_seen if old.last_seen is not None else None
        out.append(replace(old, state="down", age_s=age))
    out.sort(key=lambda h: h.name)
    return tuple(out)


def _host(
    name: str,
    h: _Host,
    now: float,
    intervals: Mapping[str, float],
    gputui: set[str],
    up: Mapping[str, float],
) -> HostSummary:
    f = h.figures
    last = h.seen
    if h.polled is not None and last is not None:
        last = min(last, h.polled)  # a stuck gputui poller serves old numbers
    interval = max((intervals.get(i, 0.0) for i in h.instances), default=0.0)
    limit = 2 * max(interval or DEFAULT_SCRAPE_INTERVAL_S, h.poll_every)
    age = now - last if last is not None else None
    state: HostState = "up"
    if h.instances and all(i in up and up[i] < 1 for i in h.instances):
        state = "down"
    elif age is not None and age > limit:
        state = "stale"
    used = f.get("used")
    return HostSummary(
        name=name,
        gpus=int(f["gpus"]),
        state=state,
        gpus_lost=int(f.get("lost", 0)),
        util_mean=f.get("util_mean"),
        util_max=f.get("util_max"),
        memory_used=used * MIB if used is not None else None,
        memory_total=f.get("total"),
        hottest_c=int(round(h.hottest[0])) if h.hottest else None,
        hottest_gpu=h.hottest[1] if h.hottest else None,
        power_w=f.get("power"),
        last_seen=last,
        age_s=age,
        instances=tuple(sorted(h.instances)),
        exporters=tuple(sorted({"gputui" if i in gputui else "dcgm" for i in h.instances})),
        simulated=h.simulated,
    )
