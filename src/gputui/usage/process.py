"""One process's run: when it ran, its peak GPU memory, mean SM % and share of the energy.

A process is its PID and its start time (a PID is reused after a process ends): the
start is the poll's time minus the process's running time, matched within
START_SLACK_S (the two clocks are read a moment apart). Where the host cannot see the
process (no running time), presence without a gap longer than the gap bound keeps the
identity.

Energy share: each integrated interval of a GPU's energy is split among the processes
on it at the interval's start, by SM % where every one of them has it, else by GPU
memory where every one has that, else not at all (counted as unapportioned seconds).
`energy_basis` says which rule gave the process its share.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputui.model.snapshot import GpuProcess

START_SLACK_S = 2.0


@dataclass
class ProcessSummary:
    """What one process used over the run; None where nothing known was seen."""

    pid: int
    start: float | None  # Unix time it started (None: the host could not see it)
    first_seen: float
    last_seen: float
    ended: bool  # gone before the run's end (else: still running when it ended)
    gpus: tuple[int, ...]
    command: str | None
    user: str | None
    memory_peak: int | None  # the most it held at once, over all its GPUs
    memory_peak_by_gpu: dict[int, int] = field(default_factory=dict)
    sm_mean: float | None = None
    energy_wh: float | None = None
    energy_basis: str | None = None  # "sm", "memory" or "sm+memory"
    unapportioned_s: float = 0.0  # its GPU time whose energy could not be split


class ProcessUsage:
    """Accumulates one process (pid + start) across polls and GPUs."""

    def __init__(self, pid: int, start: float | None, t: float) -> None:
        self.pid = pid
        self.start = start
        self.first_seen = t
        self.last_seen = t
        self.gpus: set[int] = set()
        self.command: str | None = None
        self.user: str | None = None
        self.memory_peak: int | None = None
        self.peak_by_gpu: dict[int, int] = {}
        self.sm_sum = 0.0
        self.sm_count = 0
        self.joules_by: dict[str, float] = {}
        self.unapportioned_s = 0.0

    def see(self, t: float, contexts: list[GpuProcess]) -> None:
        """Its contexts (one per GPU) in one poll (on every poll of a day: kept lean)."""
        self.last_seen = t
        held = None
        for c in contexts:
            gpu, memory, sm = c.gpu_index, c.gpu_memory, c.sm_util
            self.gpus.add(gpu)
            if self.command is None:
                self.command = c.command
            if self.user is None:
                self.user = c.user
            if memory is not None:
                held = memory if held is None else held + memory
                if memory > self.peak_by_gpu.get(gpu, -1):
                    self.peak_by_gpu[gpu] = memory
            if sm is not None:
                self.sm_sum += sm
                self.sm_count += 1
        if held is not None and (self.memory_peak is None or held > self.memory_peak):
            self.memory_peak = held

    def charge(self, joules: float, basis: str) -> None:
        self.joules_by[basis] = self.joules_by.get(basis, 0.0) + joules

    def summary(self, run_end: float, gap_bound_s: float) -> ProcessSummary:
        joules = sum(self.joules_by.values())
        return ProcessSummary(
            pid=self.pid,
            start=self.start,
            first_seen=self.first_seen,
            last_seen=self.last_seen,
            ended=self.last_seen < run_end - gap_bound_s,
            gpus=tuple(sorted(self.gpus)),
            command=self.command,
            user=self.user,
            memory_peak=self.memory_peak,
            memory_peak_by_gpu=dict(sorted(self.peak_by_gpu.items())),
            sm_mean=self.sm_sum / self.sm_count if self.sm_count else None,
            energy_wh=joules / 3600 if self.joules_by else None,
            energy_basis="+".join(sorted(self.joules_by, reverse=True)) or None,
            unapportioned_s=self.unapportioned_s,
        )


def shares(contexts: list[GpuProcess]) -> tuple[str, list[float]] | None:
    """How one GPU's energy splits among its processes now: (basis, weights) or None."""
    if not contexts:
        return None
    sm = [c.sm_util for c in contexts]
    if all(v is not None for v in sm) and sum(v or 0 for v in sm) > 0:
        total = float(sum(v or 0 for v in sm))
        return "sm", [(v or 0) / total for v in sm]
    mem = [c.gpu_memory for c in contexts]
    if all(v is not None for v in mem) and sum(v or 0 for v in mem) > 0:
        total = float(sum(v or 0 for v in mem))
        return "memory", [(v or 0) / total for v in mem]
    return None
