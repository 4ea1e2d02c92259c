"""Per-process history: keyed by PID and start time, forgotten when the process leaves."""

from __future__ import annotations

import pytest

from gputui.history.processes import ProcessHistory
from gputui.model.snapshot import GpuProcess, Snapshot

MIB = 1024**2


def snap(t: float, *procs: GpuProcess) -> Snapshot:
    return Snapshot(timestamp=t, source="nvml", devices=(), processes=procs)


def proc(pid: int, mem: int, sm: int | None, running: float | None, gpu: int = 0) -> GpuProcess:
    return GpuProcess(gpu, pid, "compute", gpu_memory=mem * MIB, sm_util=sm, running_s=running)


def test_points_accumulate_per_process_and_gpu() -> None:
    h = ProcessHistory()
    for i in range(3):
        h.add(snap(100.0 + i, proc(7, 10 + i, 50 + i, 10.0 + i), proc(7, 1, None, 10.0 + i, 1)))
    mem, sm = h.series(proc(7, 0, 0, 12.0), 102.0)
    assert mem == (10 * MIB, 11 * MIB, 12 * MIB) and sm == (50, 51, 52)
    assert h.series(proc(7, 0, 0, 12.0, gpu=1), 102.0) == ((MIB,) * 3, (None,) * 3)


def test_a_reused_pid_starts_a_new_series() -> None:
    h = ProcessHistory()
    h.add(snap(100.0, proc(7, 10, 50, 50.0)))
    h.add(snap(101.0, proc(7, 11, 51, 51.0)))
    h.add(snap(102.0, proc(7, 99, 5, 0.5)))  # started 101.5: a different process, same PID
    assert h.series(proc(7, 0, 0, 0.5), 102.0) == ((99 * MIB,), (5,))
    assert h.series(proc(7, 0, 0, 52.0), 102.0) == ((), ())  # the old one is not shown for it


def test_processes_that_leave_are_forgotten_and_memory_is_bounded() -> None:
    h = ProcessHistory(maxlen=4, max_processes=2)
    h.add(snap(1.0, proc(1, 1, 1, 1.0), proc(2, 1, 1, 1.0), proc(3, 1, 1, 1.0)))
    assert len(h) == 2  # the third is not tracked
    for t in range(2, 12):
        h.add(snap(float(t), proc(1, t, t, float(t))))
    assert len(h) == 1
    mem, _ = h.series(proc(1, 0, 0, 11.0), 11.0)
    assert mem == tuple(t * MIB for t in (8, 9, 10, 11))
    h.add(snap(12.0))
    assert len(h) == 0


def test_invalid_bounds_are_refused() -> None:
    with pytest.raises(ValueError):
        ProcessHistory(maxlen=0)


def test_byte_counts_of_large_gpus_and_na_points_come_back_as_they_went_in() -> None:
    h = ProcessHistory(maxlen=3)
    big = 141 * 1024**3  # an H200's worth of bytes: more than 32 bits
    for t, (mem, sm) in enumerate(((big, 0), (None, 100), (big - 1, None), (2**64 - 1, 7))):
        listed = GpuProcess(0, 9, "compute", gpu_memory=mem, sm_util=sm, running_s=5.0 + t)
        h.add(snap(100.0 + t, listed))
    mem_points, sm_points = h.series(proc(9, 0, 0, 8.0), 103.0)
    # 2**64 - 1 is NVML's "not available": shown as N/A, as any value out of range would be
    assert mem_points == (None, big - 1, None) and sm_points == (100, None, 7)
