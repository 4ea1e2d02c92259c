"""Recent GPU memory and SM% of each listed process, for the details dialog's sparklines.

A PID names a process only while it lives, so a series belongs to (GPU, PID,
start time): a PID reused by a new process starts a new, empty series instead
of continuing the old one. A process that leaves the listing is forgotten at
once. Memory is bounded twice: `maxlen` points per series and at most
`max_processes` series (processes beyond that are simply not tracked).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from gputui.telemetry.snapshot import GpuProcess, Snapshot

# The start time is the snapshot's time less the process's running time: both come
# from the host's clock a moment apart, so they jitter; a reused PID starts far later.
START_TOLERANCE_S = 2.0


def started_at(proc: GpuProcess, timestamp: float) -> float | None:
    """When `proc` started, as far as its listing says (None where the host cannot see it)."""
    if proc.running_s is None:
        return None
    return timestamp - proc.running_s


@dataclass
class _Series:
    started: float | None
    memory: deque[int | None]
    sm: deque[int | None] = field(default_factory=deque)


class ProcessHistory:
    def __init__(self, maxlen: int = 120, max_processes: int = 1024) -> None:
        if maxlen < 1 or max_processes < 1:
            raise ValueError("maxlen and max_processes must be positive")
        self.maxlen = maxlen
        self.max_processes = max_processes
        self._series: dict[tuple[int, int], _Series] = {}

    def __len__(self) -> int:
        return len(self._series)

    def add(self, snap: Snapshot) -> None:
        """One point per listed process; processes no longer listed are dropped."""
        listed: set[tuple[int, int]] = set()
        for p in snap.processes:
            key = (p.gpu_index, p.pid)
            listed.add(key)
            start = started_at(p, snap.timestamp)
            series = self._series.get(key)
            if series is None or not _same_start(series.started, start):
                if series is None and len(self._series) >= self.max_processes:
                    continue
                series = _Series(start, deque(maxlen=self.maxlen), deque(maxlen=self.maxlen))
                self._series[key] = series
            elif series.started is None:
                series.started = start
            series.memory.append(p.gpu_memory)
            series.sm.append(p.sm_util)
        for key in [k for k in self._series if k not in listed]:
            del self._series[key]

    def series(
        self, proc: GpuProcess, timestamp: float
    ) -> tuple[Sequence[int | None], Sequence[int | None]]:
        """(GPU memory, SM%) of the process `proc` names as listed at `timestamp`; oldest first."""
        found = self._series.get((proc.gpu_index, proc.pid))
        if found is None or not _same_start(found.started, started_at(proc, timestamp)):
            return (), ()
        return tuple(found.memory), tuple(found.sm)


def _same_start(a: float | None, b: float | None) -> bool:
    """Unknown start times (a process the host cannot see) match anything."""
    return a is None or b is None or abs(a - b) <= START_TOLERANCE_S
