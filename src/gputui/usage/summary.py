"""`summarise`: one pass over snapshots in time order into a `RunSummary`.

The polling interval sets the gap bound (GAP_INTERVALS intervals): given by the caller
(a recording knows its interval) or else the median of the first intervals, read from
at most ESTIMATE_SAMPLES snapshots held back, then replayed (bounded memory).
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from gputui.model.snapshot import DeviceSnapshot, GpuProcess, Snapshot
from gputui.usage.gpu import GpuSummary, GpuUsage
from gputui.usage.process import START_SLACK_S, ProcessSummary, ProcessUsage, shares
from gputui.usage.series import Series

GAP_INTERVALS = 5  # an interval longer than this many polling intervals is a gap
ESTIMATE_SAMPLES = 33
DEFAULT_INTERVAL_S = 1.0  # a run of one snapshot has no interval to measure
METRICS = ("util", "memory", "power", "temperature")


@dataclass
class RunSummary:
    """A run: its span, its GPUs, its processes and the series the plots draw."""

    start: float | None  # first and last snapshot's time; None for an empty run
    end: float | None
    snapshots: int
    interval_s: float
    interval_measured: bool  # estimated from the samples (else given by the recording)
    gap_bound_s: float
    gpus: list[GpuSummary] = field(default_factory=list)
    processes: list[ProcessSummary] = field(default_factory=list)
    # per metric (METRICS), per GPU index: (time, mean) points
    series: dict[str, dict[int, list[tuple[float, float]]]] = field(default_factory=dict)


def summarise(
    snapshots: Iterable[Snapshot],
    *,
    interval_s: float | None = None,
    pid: int | None = None,
    gpus: frozenset[int] | None = None,
    on_snapshot: Callable[[Snapshot], None] | None = None,
) -> RunSummary:
    """Statistics of `snapshots` (time order). `pid`: only that PID's processes in the
    table; `gpus`: only those GPU indices; `on_snapshot`: called on each (an export)."""
    stream: Iterator[Snapshot] = iter(snapshots)
    measured = interval_s is None
    if interval_s is None:
        head = list(itertools.islice(stream, ESTIMATE_SAMPLES))
        steps = [b.timestamp - a.timestamp for a, b in itertools.pairwise(head)]
        positive = [s for s in steps if s > 0]
        interval_s = statistics.median(positive) if positive else DEFAULT_INTERVAL_S
        stream = itertools.chain(head, stream)
    walk = _Walk(interval_s, GAP_INTERVALS * interval_s, pid, gpus)
    for snap in stream:
        walk.add(snap)
        if on_snapshot is not None:
            on_snapshot(snap)
    return walk.result(measured)


class _Walk:
    def __init__(
        self, interval_s: float, gap_bound_s: float, pid: int | None, gpus: frozenset[int] | None
    ) -> None:
        self.interval_s = interval_s
        self.gap_bound_s = gap_bound_s
        self.pid = pid
        self.only_gpus = gpus
        self.start: float | None = None
        self.end: float | None = None
        self.count = 0
        self.gpus: dict[int, GpuUsage] = {}
        self.series: dict[str, dict[int, Series]] = {m: {} for m in METRICS}
        self.identities: dict[int, list[ProcessUsage]] = {}  # by PID, in order of first sight
        # per GPU: the processes on it at the start of the interval now open, and how
        # that interval's energy splits among them (None: it cannot be split)
        self.split: dict[int, tuple[list[ProcessUsage], tuple[str, list[float]] | None]] = {}

    def add(self, snap: Snapshot) -> None:
        t = snap.timestamp
        if self.end is not None and t <= self.end:
            return  # out of order or repeated: a recording's seam
        prev_t = self.end
        if self.start is None:
            self.start = t
        self.end = t
        self.count += 1
        by_gpu = self._processes(t, snap.processes)
        for device in snap.devices:
            index = device.index
            if self.only_gpus is not None and index not in self.only_gpus:
                continue
            usage = self.gpus.get(index)
            if usage is None:
                usage = self.gpus[index] = GpuUsage(index, device.info.name, self.gap_bound_s)
            joules = usage.add(t, device)
            if joules is not None and prev_t is not None:
                self._charge(index, joules, t - prev_t)
            self._plot(t, index, device)
            contexts = by_gpu.get(index, [])
            self.split[index] = ([u for u, _ in contexts], shares([c for _, c in contexts]))

    def _charge(self, index: int, joules: float, dt: float) -> None:
        users, split = self.split.get(index, ([], None))
        if split is None:
            for usage in users:
                usage.unapportioned_s += dt
            return
        basis, weights = split
        for usage, weight in zip(users, weights, strict=True):
            usage.charge(joules * weight, basis)

    def _plot(self, t: float, index: int, device: DeviceSnapshot) -> None:
        sample = device.sample
        if sample is None:
            return
        memory = None if sample.memory_used is None else sample.memory_used / 2**30
        values = (sample.utilization_gpu, memory, sample.power_w, sample.temperature_c)
        for metric, value in zip(METRICS, values, strict=True):
            per_gpu = self.series[metric]
            series = per_gpu.get(index)
            if series is None:
                series = per_gpu[index] = Series(self.start or t, self.interval_s)
            series.add(t, value)

    def _processes(
        self, t: float, processes: tuple[GpuProcess, ...]
    ) -> dict[int, list[tuple[ProcessUsage, GpuProcess]]]:
        by_pid: dict[int, list[GpuProcess]] = {}
        for p in processes:
            if self.only_gpus is None or p.gpu_index in self.only_gpus:
                by_pid.setdefault(p.pid, []).append(p)
        by_gpu: dict[int, list[tuple[ProcessUsage, GpuProcess]]] = {}
        for pid, contexts in by_pid.items():
            usage = self._identity(pid, t, contexts)
            usage.see(t, contexts)
            for c in contexts:
                by_gpu.setdefault(c.gpu_index, []).append((usage, c))
        return by_gpu

    def _identity(self, pid: int, t: float, contexts: list[GpuProcess]) -> ProcessUsage:
        running = next((c.running_s for c in contexts if c.running_s is not None), None)
        start = None if running is None else t - running
        known = self.identities.setdefault(pid, [])
        for usage in reversed(known):
            if start is not None and usage.start is not None:
                if abs(usage.start - start) <= START_SLACK_S:
                    return usage
            elif t - usage.last_seen <= self.gap_bound_s:
                if usage.start is None:
                    usage.start = start
                return usage
        usage = ProcessUsage(pid, start, t)
        known.append(usage)
        return usage

    def result(self, measured: bool) -> RunSummary:
        end = self.end if self.end is not None else 0.0
        processes = [
            u.summary(end, self.gap_bound_s)
            for pid, known in self.identities.items()
            if self.pid is None or pid == self.pid
            for u in known
        ]
        processes.sort(key=lambda p: (p.first_seen, p.pid))
        return RunSummary(
            start=self.start,
            end=self.end,
            snapshots=self.count,
            interval_s=self.interval_s,
            interval_measured=measured,
            gap_bound_s=self.gap_bound_s,
            gpus=[self.gpus[i].summary() for i in sorted(self.gpus)],
            processes=processes,
            series={
                metric: {i: s.points() for i, s in sorted(per_gpu.items())}
                for metric, per_gpu in self.series.items()
            },
        )
