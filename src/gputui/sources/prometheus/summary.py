"""The cluster view's host table, aggregated by Prometheus: one query, one series per host figure.

Why: reading every GPU's series to draw one row per host makes the view's
cost (and Prometheus') grow with the GPUs of the fleet; here Prometheus does
the sums and the view parses a few series per host. The queries are
three PromQL expressions, each figure tagged with a `stat` label and joined by
`or`:

- figures are grouped by host label and scrape target, and the host named
  here as host_of names it: `Hostname`, else `hostname` (dcgm-exporter
  4.x), else the target;
- a host scraped through gputui and dcgm-exporter (a mixed host) takes each
  figure from its gputui target first, dcgm-exporter's filling what gputui
  lacks, as assemble.py merges its GPUs;
- a value outside its metric's bounds (bounds.py) is left out, as the
  per-GPU reader treats it as missing;
- a GPU is one with FB_USED or gputui_gpu_up, the same as the per-GPU
  reader's freshness query (counted per target, the larger count kept).

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
from gputui.model.cluster_summary import IDLE_HELD_MIB, HostSummary, UserTotal
from gputui.sources.prometheus.api import Sample
from gputui.sources.prometheus.assemble import DEFAULT_SCRAPE_INTERVAL_S
from gputui.sources.prometheus.bounds import METRIC_BOUNDS, bounded, index_label, timestamp
from gputui.sources.prometheus.series import (
    GPU_UP,
    LAST_POLL,
    MIB,
    POLL_INTERVAL,
    PROC_MEMORY,
    host_of,
)

BY = "Hostname, hostname, instance"  # one series per host and scrape target: the host is named
# as host_of names it (Hostname, else 4.x's hostname, else the target), here, not in PromQL
GPU_INDEX = 'gpu=~"[0-9]{1,9}"'  # what index_label takes: a series with another gpu is not a GPU
UTIL = "DCGM_FI_DEV_GPU_UTIL"
USED = "DCGM_FI_DEV_FB_USED"
FREE = "DCGM_FI_DEV_FB_FREE"
RESERVED = "DCGM_FI_DEV_FB_RESERVED"
TEMP = "DCGM_FI_DEV_GPU_TEMP"
POWER = "DCGM_FI_DEV_POWER_USAGE"
TOTAL = "gputui_gpu_memory_total_bytes"
# Figures a host takes from its first target that has them, gputui exporters first (a mixed
# host: gputui's, dcgm-exporter's filling what gputui lacks), as assemble.py merges GPUs.
GROUPS = (  # the queries of a refresh, by what they pass over: FB_USED; temperature and
    # utilisation; power and memory
    ("gpus", "gpus_up", "lost", "seen", "seen_up", "last_poll", "poll_every", "up"),
    ("hottest", "util_mean", "util_max", "idle_held"),
    ("power", "used", "free", "reserved", "total_bytes", "user_memory", "user_procs",
     "user_gpus", "user_hosts"),
)  # fmt: skip
USER_STATS = ("user_memory", "user_procs", "user_gpus", "user_hosts")
GPU_BY = f"{BY}, gpu"
FIRST_OF = ("util_mean", "util_max", "used", "free", "reserved", "total_bytes", "power")


class SummaryQuery:
    """The one expression for the host table, under the view's `--match` matchers.

    Every figure is one aggregation over one metric, grouped by host and target:
    Prometheus passes over each metric's series once or twice, with no relabelling
    (label_replace over every GPU series costs it more than the sums do)."""

    def __init__(self, matchers: str = "") -> None:
        self.matchers = matchers

    def sel(self, name: str, *, gpu: bool = True) -> str:
        parts = [f'__name__="{name}"']
        if gpu:
            parts.append(GPU_INDEX)
        if self.matchers:
            parts.append(self.matchers)
        return "{" + ", ".join(parts) + "}"

    def bounded(self, name: str) -> str:
        """The metric's series within its bounds (bounds.py): outside, a value is left out."""
        lo, hi = METRIC_BOUNDS[name]
        return f"({self.sel(name)} >= {lo:g} <= {hi:g})"

    def stats(self) -> dict[str, str]:
        b = self.bounded
        return {
            # a MIG GPU has one FB_USED series per MIG device: GPUs are distinct gpu labels
            "gpus": f"count by ({BY}) (count by ({BY}, gpu) ({self.sel(USED)}))",
            "gpus_up": f"count by ({BY}) ({self.sel(GPU_UP)})",
            "lost": f"count by ({BY}) ({self.sel(GPU_UP)} < 1)",
            "seen": f"max by ({BY}) (timestamp({self.sel(USED)}))",
            "seen_up": f"max by ({BY}) (timestamp({self.sel(GPU_UP)}))",
            "last_poll": f"max by ({BY}, source) ({self.sel(LAST_POLL, gpu=False)})",
            "poll_every": f"max by ({BY}) ({self.sel(POLL_INTERVAL, gpu=False)})",
            "up": "up",
            # ties: any of the hottest GPUs
            "hottest": f"max by ({BY}, gpu) (topk by ({BY}) (1, {b(TEMP)}))",
            "util_mean": f"avg by ({BY}) ({b(UTIL)})",
            "util_max": f"max by ({BY}) ({b(UTIL)})",
            "power": f"sum by ({BY}) ({b(POWER)})",
            "used": f"sum by ({BY}) ({b(USED)})",
            "free": f"sum by ({BY}) ({b(FREE)})",
            "reserved": f"sum by ({BY}) ({b(RESERVED)})",
            "total_bytes": f"sum by ({BY}) ({b(TOTAL)})",
            # GPUs holding memory at 0 % utilisation (a MIG GPU has no utilisation: never)
            "idle_held": f"count by ({BY}) (max by ({GPU_BY}) ({b(UTIL)}) == 0 and on ({GPU_BY})"
            f" sum by ({GPU_BY}) ({b(USED)}) >= {IDLE_HELD_MIB})",
            # per user across the fleet (gputui exporters' process series)
            "user_memory": f"sum by (user) ({self.sel(PROC_MEMORY, gpu=False)})",
            "user_procs": f"count by (user) ({self.sel(PROC_MEMORY, gpu=False)})",
            "user_gpus": f"count by (user) (count by (user, {GPU_BY}) "
            f"({self.sel(PROC_MEMORY, gpu=False)}))",
            "user_hosts": f"count by (user) (count by (user, {BY}) "
            f"({self.sel(PROC_MEMORY, gpu=False)}))",
        }

    def exprs(self) -> list[str]:
        """The figures in len(GROUPS) queries, each two or three passes over the GPU series: a
        refresh is a fixed handful of requests, none long enough to meet the deadline of one
        query on a busy server."""
        stats = self.stats()
        return [
            " or ".join(f'label_replace({stats[k]}, "stat", "{k}", "", "")' for k in group)
            for group in GROUPS
        ]


class _Host:
    __slots__ = ("by_target", "gpus", "hottest", "instances", "seen", "polled", "poll_every",
                 "simulated", "idle_held")  # fmt: skip

    def __init__(self) -> None:
        self.by_target: dict[str, dict[str, float]] = {}  # instance -> figure -> value
        self.gpus = 0
        self.hottest: dict[str, tuple[float, int]] = {}  # instance -> (temperature, gpu)
        self.instances: set[str] = set()
        self.seen: float | None = None
        self.polled: float | None = None
        self.poll_every = 0.0
        self.simulated = False
        self.idle_held = 0


def summarise(
    samples: Sequence[Sample],
    now: float,
    *,
    intervals: Mapping[str, float],
    known: Mapping[str, HostSummary],
) -> tuple[HostSummary, ...]:
    """The hosts of one answer to SummaryQuery.exprs(); `known`: the last refresh's (a host
    whose series vanished is kept, marked down, while its target is listed in `up`)."""
    hosts: dict[str, _Host] = {}
    gputui: set[str] = set()
    up: dict[str, float] = {}
    for s in samples:
        stat = s.labels.get("stat", "")
        instance = s.labels.get("instance", "")
        if stat == "up":
            up[instance] = s.value
            continue
        if stat in USER_STATS:
            continue  # user_totals' figures
        h = hosts.setdefault(host_of(s.labels), _Host())
        if instance:
            h.instances.add(instance)
        if stat in ("seen", "seen_up"):
            if not math.isnan(at := timestamp(s.value)):
                h.seen = max(h.seen or 0.0, at)
        elif stat == "last_poll":
            gputui.add(instance)
            if not math.isnan(at := bounded(LAST_POLL, s.value)):
                h.polled = max(h.polled or 0.0, at)
            h.simulated = h.simulated or s.labels.get("source") == "simulated"
        elif stat == "poll_every":
            if not math.isnan(every := bounded(POLL_INTERVAL, s.value)):
                h.poll_every = max(h.poll_every, every)
        elif stat == "hottest":
            index = index_label(s.labels.get("gpu"))
            if index is not None and not math.isnan(s.value):
                reading = (s.value, index)
                h.hottest[instance] = max(h.hottest.get(instance, reading), reading)
        elif stat in ("gpus", "gpus_up"):
            h.gpus = max(h.gpus, int(s.value))  # a mixed host: the target that sees the most
        elif stat == "idle_held":
            if not math.isnan(s.value):
                h.idle_held = max(h.idle_held, int(s.value))
        elif not math.isnan(s.value):
            figures = h.by_target.setdefault(instance, {})
            figures[stat] = s.value
    out = [_host(name, h, now, intervals, gputui, up) for name, h in hosts.items() if h.gpus]
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
    order = sorted(h.instances, key=lambda i: (i not in gputui, i))
    f: dict[str, float] = {}
    for stat in FIRST_OF:
        for i in order:
            if stat in (figures := h.by_target.get(i, {})):
                f[stat] = figures[stat]
                break
    hottest = next((h.hottest[i] for i in order if i in h.hottest), None)
    lost = max((v.get("lost", 0.0) for v in h.by_target.values()), default=0.0)
    total = f.get("total_bytes")
    if total is None and "used" in f and "free" in f:
        total = (f["used"] + f["free"] + f.get("reserved", 0.0)) * MIB
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
    return HostSummary(
        name=name,
        gpus=h.gpus,
        state=state,
        gpus_lost=int(lost),
        util_mean=f.get("util_mean"),
        util_max=f.get("util_max"),
        memory_used=f["used"] * MIB if "used" in f else None,
        memory_total=total,
        hottest_c=int(round(hottest[0])) if hottest else None,
        hottest_gpu=hottest[1] if hottest else None,
        power_w=f.get("power"),
        last_seen=last,
        age_s=age,
        instances=tuple(sorted(h.instances)),
        exporters=tuple(sorted({"gputui" if i in gputui else "dcgm" for i in h.instances})),
        simulated=h.simulated,
        gpus_idle_held=h.idle_held,
    )


def user_totals(samples: Sequence[Sample]) -> tuple[UserTotal, ...]:
    """Each user's GPU memory, processes, GPUs and hosts across the fleet, most memory first
    (from the same answer as summarise; a process with no user label is "N/A")."""
    figures: dict[str, dict[str, float]] = {}
    for s in samples:
        stat = s.labels.get("stat", "")
        if stat in USER_STATS and not math.isnan(s.value) and 0 <= s.value < 1e18:
            user = visible(s.labels.get("user", "")) or "N/A"
            figures.setdefault(user, {})[stat] = s.value
    out = [
        UserTotal(
            user,
            f.get("user_memory", 0.0),
            int(f.get("user_procs", 0)),
            int(f.get("user_gpus", 0)),
            int(f.get("user_hosts", 0)),
        )
        for user, f in figures.items()
    ]
    out.sort(key=lambda u: (-u.memory, u.user))
    return tuple(out)
