"""Recent GPU memory and SM% of each listed process, for the details dialog's sparklines.

A PID names a process only while it lives, so a series belongs to (GPU, PID,
start time): a PID reused by a new process starts a new, empty series instead
of continuing the old one. A process that leaves the listing is forgotten at
once. Memory is bounded twice: `maxlen` points per series and at most
`max_processes` series (processes beyond that are simply not tracked). Points
are unsigned 64-bit integers in `array('Q')` (8 bytes; a deque of ints costs a
pointer and, for byte counts, a 32-byte int object), with NVML's own "not
available" value, 2**64 - 1, standing for N/A.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

from gputui.model.snapshot import GpuProcess, Snapshot

# The start time is the snapshot's time less the process's running time: both come
# from the host's clock a moment apart, so they jitter; a reused PID starts far later.
START_TOLERANCE_S = 2.0


def started_at(proc: GpuProcess, timestamp: float) -> float | None:
    """When `proc` started, as far as its listing says (None where the host cannot see it)."""
    if proc.running_s is None:
        return None
    return timestamp - proc.running_s


_NA = 2**64 - 1  # NVML_VALUE_NOT_AVAILABLE; also what any value outside 0..2**64-2 reads as


def _stored(value: int | None) -> int:
    return value if value is not None and 0 <= value < _NA else _NA


def _shown(points: array[int]) -> tuple[int | None, ...]:
    return tuple(None if v == _NA else v for v in points)


@dataclass
class _Series:
    started: float | None
    memory: array[int] = field(default_factory=lambda: array("Q"))
    sm: array[int] = field(default_factory=lambda: array("Q"))

    def append(self, memory: int | None, sm: int | None, maxlen: int) -> None:
        full = len(self.memory) >= maxlen
        self.memory.append(_stored(memory))
        self.sm.append(_stored(sm))
        if full:
            del self.memory[0]
            del self.sm[0]


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
                series = self._series[key] = _Series(start)
            elif series.started is None:
                series.started = start
            series.append(p.gpu_memory, p.sm_util, self.maxlen)
        for key in [k for k in self._series if k not in listed]:
            del self._series[key]

    def series(
        self, proc: GpuProcess, timestamp: float
    ) -> tuple[Sequence[int | None], Sequence[int | None]]:
        """(GPU memory, SM%) of the process `proc` names as listed at `timestamp`; oldest first."""
        found = self._series.get((proc.gpu_index, proc.pid))
        if found is None or not _same_start(found.started, started_at(proc, timestamp)):
            return (), ()
        return _shown(found.memory), _shown(found.sm)


def _same_start(a: float | None, b: float | None) -> bool:
    """Unknown start times (a process the host cannot see) match anything."""
    return a is None or b is None or abs(a - b) <= START_TOLERANCE_S
