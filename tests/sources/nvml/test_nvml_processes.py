"""GPU processes: merging the lists, struct-version fallback, per-process utilization state."""

from __future__ import annotations

import pynvml
import pytest

from gputui.sources.nvml.procs import FIRST_CAPACITY
from gputui.sources.nvml.source import NvmlSource

MiB = 1024 * 1024
GiB = 1024 * MiB
NOT_AVAILABLE = (1 << 64) - 1


def _by_pid(snap):
    return {p.pid: p for p in snap.processes}


def test_processes_types_and_memory(fake_nvml):
    snap = NvmlSource.open(with_host=False).poll()
    procs = _by_pid(snap)
    assert set(procs) == {1001, 1002, 1003, 2001}
    assert (procs[1001].gpu_index, procs[1001].type, procs[1001].gpu_memory) == (
        0,
        "compute",
        8 * GiB,
    )
    assert (procs[1002].type, procs[1002].gpu_memory) == ("graphics", 312 * MiB)
    # in both the compute and the graphics list: one row
    assert (procs[1003].type, procs[1003].gpu_memory) == ("compute+graphics", 96 * MiB)
    assert [p.pid for p in snap.processes].count(1003) == 1
    assert (procs[2001].gpu_index, procs[2001].gpu_memory) == (1, 30 * GiB)
    assert all(p.host_visible and p.user is None for p in snap.processes)


def test_mps_processes(fake_nvml):
    fake_nvml.gpus[1].mps = [(3001, 1 * GiB)]
    procs = _by_pid(NvmlSource.open(with_host=False).poll())
    assert (procs[3001].gpu_index, procs[3001].type) == (1, "mps")


def test_used_memory_not_available(fake_nvml):
    fake_nvml.gpus[1].compute = [(2001, NOT_AVAILABLE)]
    procs = _by_pid(NvmlSource.open(with_host=False).poll())
    assert procs[2001].gpu_memory is None


def test_a_gpu_with_more_processes_than_one_call_asks_room_for_all(fake_nvml):
    """One call per list and poll with room for FIRST_CAPACITY; NVML's INSUFFICIENT_SIZE
    (and the count it says) makes a second, larger one, as pynvml's wrappers would."""
    many = [(5000 + i, (i + 1) * MiB) for i in range(FIRST_CAPACITY + 6)]
    fake_nvml.gpus[1].compute = many
    snap = NvmlSource.open(with_host=False).poll()
    procs = _by_pid(snap)
    assert {pid: procs[pid].gpu_memory for pid, _ in many} == dict(many)
    assert fake_nvml.n("nvmlDeviceGetComputeRunningProcesses_v3", 1) == 2
    assert fake_nvml.n("nvmlDeviceGetComputeRunningProcesses_v3", 0) == 1  # two processes fit


def test_a_list_that_keeps_outgrowing_its_buffer_is_an_error_not_a_loop(fake_nvml, monkeypatch):
    def always_more(_g, count_ref, _records):
        count_ref._obj.value = 10**6
        return pynvml.NVML_ERROR_INSUFFICIENT_SIZE

    real = fake_nvml._function_pointer
    monkeypatch.setattr(
        pynvml,
        "_nvmlGetFunctionPointer",
        lambda s: always_more if s == "nvmlDeviceGetComputeRunningProcesses_v3" else real(s),
    )
    snap = NvmlSource.open(with_host=False).poll()
    assert {p.pid for p in snap.processes} == {1002, 1003}  # graphics listed, compute N/A
    assert snap.devices[0].failed is None


def test_driver_without_v3_falls_back_to_v2(fake_nvml):
    for kind in ("Compute", "Graphics", "MPSCompute"):
        fake_nvml.missing.add(f"nvmlDeviceGet{kind}RunningProcesses_v3")
    src = NvmlSource.open(with_host=False)
    src.poll()
    snap = src.poll()
    procs = _by_pid(snap)
    assert set(procs) == {1001, 1002, 1003, 2001}
    assert procs[1003].type == "compute+graphics"
    assert procs[1001].gpu_memory == 8 * GiB
    assert "processes" not in snap.devices[0].unsupported
    # _v3 looked for once per device (absent: never called), then _v2 on every poll
    assert fake_nvml.lookups["nvmlDeviceGetComputeRunningProcesses_v3"] == 2
    assert fake_nvml.n("nvmlDeviceGetComputeRunningProcesses_v3", 0) == 0
    assert fake_nvml.n("nvmlDeviceGetComputeRunningProcesses_v2", 0) == 2


def test_driver_with_only_v1_process_lists(fake_nvml):
    for kind in ("Compute", "Graphics", "MPSCompute"):
        fake_nvml.missing.add(f"nvmlDeviceGet{kind}RunningProcesses_v3")
        fake_nvml.missing.add(f"nvmlDeviceGet{kind}RunningProcesses_v2")
    fake_nvml.gpus[1].mps = [(3001, 5 * MiB)]
    src = NvmlSource.open(with_host=False)
    src.poll()
    procs = _by_pid(src.poll())
    assert {pid: (p.type, p.gpu_memory) for pid, p in procs.items()} == {
        1001: ("compute", 8 * GiB),
        1003: ("compute+graphics", 96 * MiB),
        1002: ("graphics", 312 * MiB),
        2001: ("compute", 30 * GiB),
        3001: ("mps", 5 * MiB),
    }
    # the C symbol is called once per poll (room for FIRST_CAPACITY records)
    assert fake_nvml.n("nvmlDeviceGetComputeRunningProcesses", 0) == 2
    # _v3 and _v2 looked for once per device, never called
    assert fake_nvml.lookups["nvmlDeviceGetComputeRunningProcesses_v2"] == 2
    assert fake_nvml.n("nvmlDeviceGetComputeRunningProcesses_v2", 0) == 0


def test_no_process_list_at_all(fake_nvml):
    for kind in ("Compute", "Graphics", "MPSCompute"):
        for suffix in ("_v3", "_v2", ""):
            fake_nvml.missing.add(f"nvmlDeviceGet{kind}RunningProcesses{suffix}")
    snap = NvmlSource.open(with_host=False).poll()
    assert snap.processes == ()
    assert {"processes", "graphics_processes", "mps_processes"} <= snap.devices[0].unsupported
    assert snap.devices[0].failed is None


def test_process_list_not_supported_on_one_gpu(fake_nvml):
    fake_nvml.gpus[0].errors["nvmlDeviceGetComputeRunningProcesses_v3"] = (
        pynvml.NVML_ERROR_NOT_SUPPORTED
    )
    src = NvmlSource.open(with_host=False)
    src.poll()
    snap = src.poll()
    assert {p.pid for p in snap.processes} == {1002, 1003, 2001}
    assert fake_nvml.n("nvmlDeviceGetComputeRunningProcesses_v3", 0) == 1
    assert fake_nvml.n("nvmlDeviceGetComputeRunningProcesses_v2", 0) == 0


def test_per_process_utilization_and_last_seen_timestamp(fake_nvml):
    src = NvmlSource.open(with_host=False)
    procs = _by_pid(src.poll())
    assert (procs[1001].sm_util, procs[1001].mem_util) == (60, 20)
    assert (procs[1003].sm_util, procs[1003].mem_util) == (2, 1)
    assert (procs[1002].sm_util, procs[1002].mem_util) == (None, None)  # no sample for it
    assert (procs[2001].sm_util, procs[2001].mem_util) == (91, 55)

    # nothing newer: NOT_FOUND; the previous values stay
    procs = _by_pid(src.poll())
    assert (procs[1001].sm_util, procs[2001].sm_util) == (60, 91)

    # a newer sample for one process only
    fake_nvml.gpus[0].util_samples.append((1001, 7_000_000, 10, 4))
    procs = _by_pid(src.poll())
    assert (procs[1001].sm_util, procs[1001].mem_util) == (10, 4)
    assert procs[1003].sm_util == 2

    asked = [ts for gpu, ts in fake_nvml.util_asked if gpu == 0]
    assert asked == [0, 5_000_000, 5_000_000]
    asked1 = [ts for gpu, ts in fake_nvml.util_asked if gpu == 1]
    assert asked1 == [0, 6_000_000, 6_000_000]
    procs = _by_pid(src.poll())
    assert [ts for gpu, ts in fake_nvml.util_asked if gpu == 0][-1] == 7_000_000


def test_newest_sample_per_pid_wins(fake_nvml):
    fake_nvml.gpus[1].util_samples = [
        (2001, 3_000_000, 11, 1),
        (2001, 4_000_000, 44, 4),
        (2001, 2_000_000, 22, 2),
    ]
    procs = _by_pid(NvmlSource.open(with_host=False).poll())
    assert (procs[2001].sm_util, procs[2001].mem_util) == (44, 4)


def test_utilization_of_a_process_that_left_is_forgotten(fake_nvml):
    src = NvmlSource.open(with_host=False)
    src.poll()
    g = fake_nvml.gpus[1]
    g.compute = []
    assert [p for p in src.poll().processes if p.gpu_index == 1] == []
    g.compute = [(2001, GiB)]  # PID reused by a new process, no new sample yet
    procs = _by_pid(src.poll())
    assert procs[2001].sm_util is None


def test_no_utilization_call_without_processes(fake_nvml):
    fake_nvml.gpus[1].compute = []
    NvmlSource.open(with_host=False).poll()
    assert fake_nvml.n("nvmlDeviceGetProcessUtilization", 1) == 0
    assert fake_nvml.n("nvmlDeviceGetProcessUtilization", 0) == 1


@pytest.mark.parametrize("code", [pynvml.NVML_ERROR_NOT_SUPPORTED, pynvml.NVML_ERROR_NO_PERMISSION])
def test_utilization_unavailable_keeps_the_process_list(fake_nvml, code):
    fake_nvml.gpus[0].errors["nvmlDeviceGetProcessUtilization"] = code
    snap = NvmlSource.open(with_host=False).poll()
    procs = _by_pid(snap)
    assert procs[1001].sm_util is None and procs[1001].gpu_memory == 8 * GiB
    assert snap.devices[0].failed is None
