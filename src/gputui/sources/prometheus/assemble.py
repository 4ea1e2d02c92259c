"""One refresh's answers joined into hosts and GPUs: what the cluster source returns.

The queries (source.py) give flat series; here they are grouped by (host, gpu
index), a host seen through gputui and dcgm-exporter takes gputui's values
first, processes join their GPU, and each host gets its state: `down` when
every scrape target of it reports `up` 0 or its series vanished, `stale` when
its newest sample is older than two scrape intervals (or a gputui exporter's
last poll is).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace

from gputui.core.textsafe import visible
from gputui.model.cluster import ClusterGpu, ClusterHost, HostState, MigReading
from gputui.model.snapshot import DeviceSample, GpuProcess
from gputui.sources.prometheus.api import Sample
from gputui.sources.prometheus.bounds import bounded, index_label, timestamp
from gputui.sources.prometheus.mig import profile_label
from gputui.sources.prometheus.series import (
    CARD_INFO,
    FLOAT_FIELDS,
    GPU_UP,
    LAST_POLL,
    MIB,
    MIG_METRICS,
    PER_INSTANCE_METRICS,
    POLL_INTERVAL,
    PROC_MEMORY,
    PROC_SM,
    SAMPLE_METRICS,
    THROTTLE,
    gpu_index,
    gputui_first,
    host_of,
    instance_host,
    uuid_of,
)

DEFAULT_SCRAPE_INTERVAL_S = 60.0
_MIG_NAME_RE = re.compile(
    r"^(\d{1,9}):(\d{1,3})$"
)  # Prometheus' own default when the targets API says nothing


class GpuBuilder:
    __slots__ = ("host", "index", "name", "uuid", "pci", "values", "up", "card", "arch", "throttle",
                 "instances")  # fmt: skip

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
        # MIG: GPU instance id -> its labels ("profile", "mig_index") and values by metric
        self.instances: dict[int, dict[str, object]] = {}

    def mig_value(self, name: str, labels: dict[str, str], value: float) -> bool:
        """Keep one MIG device's memory value (a series with a GPU_I_ID); False if not one."""
        gi = index_label(labels.get("GPU_I_ID"))
        if gi is None:
            return False
        entry = self.instances.setdefault(gi, {})
        if "profile" not in entry:
            entry["profile"] = profile_label(labels.get("GPU_I_PROFILE"))
            entry["mig_index"] = _mig_index(labels.get("mig"), self.index)
        if not math.isnan(value):
            entry.setdefault(name, value)
        return True

    def mig(self) -> tuple[MigReading, ...]:
        """The MIG devices with both memory values (a half-read one has no total)."""
        out = []
        for gi, entry in sorted(self.instances.items()):
            used, free = entry.get("DCGM_FI_DEV_FB_USED"), entry.get("DCGM_FI_DEV_FB_FREE")
            if not isinstance(used, float) or not isinstance(free, float):
                continue
            profile, index = entry["profile"], entry["mig_index"]
            out.append(
                MigReading(
                    self.host,
                    self.index,
                    gi,
                    profile if isinstance(profile, str) else None,
                    int(round(free * MIB)),
                    int(round(used * MIB)),
                    index if isinstance(index, int) else None,
                )
            )
        return tuple(out)

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
        mig = self.mig()
        for name in MIG_METRICS:  # a MIG GPU's memory is its instances' (no series for the card)
            parts = [v for e in self.instances.values() if isinstance(v := e.get(name), float)]
            if name not in self.values and parts:
                self.values[name] = float(sum(parts))
        if up:
            kwargs: dict[str, float | int] = {}
            for metric, (attr, scale) in SAMPLE_METRICS.items():
                value = self.values.get(metric)
                if value is None:
                    continue
                value *= scale
                kwargs[attr] = value if attr in FLOAT_FIELDS else int(round(value))
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
            mig=mig,
        )


def _mig_index(text: str | None, gpu: int) -> int | None:
    """The MIG device index of gputui's `mig` label ("0:2" on GPU 0), else None."""
    found = _MIG_NAME_RE.match(text or "")
    if found is None or int(found.group(1)) != gpu:
        return None
    return int(found.group(2))


def gputui_instances_of(values: Sequence[Sample]) -> set[str]:
    """The scrape targets that are gputui exporters: those serving any gputui_ series."""
    return {
        s.labels.get("instance", "")
        for s in values
        if s.labels.get("__name__", "").startswith("gputui_")
    }


def in_order(samples: Iterable[Sample], gputui_instances: set[str]) -> Iterator[Sample]:
    """The samples as a stable sort by gputui_first would give them, grouped by instance in
    one pass: the key depends on the instance alone, and a fleet has far fewer instances
    than samples (a sort called the key once per sample, 200,000 times at 1,000 hosts)."""
    by_instance: dict[str, list[Sample]] = {}
    for s in samples:
        by_instance.setdefault(s.labels.get("instance", ""), []).append(s)
    for instance in sorted(
        by_instance, key=lambda i: gputui_first({"instance": i}, gputui_instances)
    ):
        yield from by_instance[instance]


def assemble(
    values: Sequence[Sample],
    fresh: Sequence[Sample],
    up: Sequence[Sample],
    now: float,
    *,
    intervals: Mapping[str, float],
    known: Mapping[str, ClusterHost],
    gputui_instances: set[str],
) -> tuple[ClusterHost, ...]:
    """The hosts of one refresh. `fresh`: identity and newest sample time per GPU; `up`: the
    targets' `up`; `intervals`: scrape interval per target; `known`: the last refresh's
    hosts (one whose series vanished is kept, marked down, while its target is listed)."""
    gpus: dict[tuple[str, int], GpuBuilder] = {}
    host_instances: dict[str, set[str]] = {}
    simulated: set[str] = set()
    procs: dict[tuple[str, int, int], dict[str, object]] = {}
    last_poll: dict[str, float] = {}
    poll_interval: dict[str, float] = {}

    for s in in_order(fresh, gputui_instances):
        index = gpu_index(s.labels)
        if index is None:
            continue
        host = host_of(s.labels)
        b = gpus.get((host, index))
        if b is None:
            b = gpus[(host, index)] = GpuBuilder(host, index)
        b.labels(s.labels)
        if s.labels.get("instance"):
            host_instances.setdefault(host, set()).add(s.labels["instance"])
    for s in in_order(values, gputui_instances):
        name = s.labels.get("__name__", "")
        host = host_of(s.labels)
        instance = s.labels.get("instance")
        if name == LAST_POLL:
            if not math.isnan(polled_at := bounded(name, s.value)):
                who = instance_host(s.labels)
                last_poll[who] = max(last_poll.get(who, 0.0), polled_at)
            if s.labels.get("source") == "simulated":
                simulated.add(instance_host(s.labels))
            continue
        if name == POLL_INTERVAL:
            if not math.isnan(every := bounded(name, s.value)):
                poll_interval[instance_host(s.labels)] = every
            continue
        index = gpu_index(s.labels)
        if index is None:
            continue
        if instance:
            host_instances.setdefault(host, set()).add(instance)
        if name in (PROC_MEMORY, PROC_SM):
            _add_process(procs, host, index, name, s)
            continue
        b = gpus.get((host, index))
        if b is None:
            b = gpus[(host, index)] = GpuBuilder(host, index)
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
        elif name in PER_INSTANCE_METRICS and b.mig_value(name, s.labels, bounded(name, s.value)):
            continue
        elif not math.isnan(value := bounded(name, s.value)) and name not in b.values:
            b.values[name] = value
    newest: dict[tuple[str, int], float] = {}
    for s in fresh:
        index = gpu_index(s.labels)
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
    procs_by_host = _processes_by_host(procs)
    hosts: list[ClusterHost] = []
    for name, host_gpus in by_host.items():
        instances = tuple(sorted(host_instances.get(name, ())))
        seen = [g.last_seen for g in host_gpus if g.last_seen is not None]
        last = max(seen) if seen else None
        polled = [last_poll[k] for k in (name, *instances) if k in last_poll]
        if polled and last is not None:
            last = min(last, max(polled))  # a stuck gputui poller serves old numbers
        interval = max((intervals.get(i, 0.0) for i in instances), default=0.0)
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
                processes=procs_by_host.get(name, ()),
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
    for name, old in known.items():
        if name in current:
            continue
        # Its series vanished (stale markers after failed scrapes, or the target left):
        # keep the last numbers, marked down, until the target itself is gone from `up`.
        if old.instances and not any(s.labels.get("instance") in old.instances for s in up):
            continue
        age = now - old.last_seen if old.last_seen is not None else None
        hosts.append(replace(old, state="down", age_s=age))
    hosts.sort(key=lambda h: h.name)
    return tuple(hosts)


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


def _processes_by_host(
    procs: dict[tuple[str, int, int], dict[str, object]],
) -> dict[str, tuple[GpuProcess, ...]]:
    """Every host's processes, by (gpu index, pid): one sort of the fleet's processes, not
    one per host (which made a refresh quadratic in the fleet's size)."""
    out: dict[str, list[GpuProcess]] = {}
    for (host, index, pid), entry in sorted(procs.items()):
        labels = entry["labels"]
        assert isinstance(labels, dict)
        memory = entry.get(PROC_MEMORY)
        sm = entry.get(PROC_SM)
        cmdline = labels.get("cmdline")
        out.setdefault(host, []).append(
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
                gpu_instance_id=index_label(labels.get("GPU_I_ID")),
                mig_index=_mig_index(labels.get("mig"), index),
            )
        )
    return {host: tuple(found) for host, found in out.items()}
