"""What a poll asks NVML, counted at the pynvml boundary (conftest.py): the per-poll budget.

The dashboard polls every second; each NVML call is an ioctl on a real driver.
These tests pin which functions a steady-state poll calls (and how often), and
that `detail="table"`, used by `gputui snapshot`'s text output, asks only for
what that table prints while printing exactly the same table.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import pynvml
import pytest

from gputui.model.snapshot import Snapshot
from gputui.render.snapshot_text import render
from gputui.sources.nvml.source import NvmlSource

from .conftest import FakeMig, FakeNvml

MiB = 1024 * 1024
GiB = 1024 * MiB


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# One GPU, one steady-state poll at 1 s (no PCIe refresh, no slow facts due).
PER_POLL = {
    "nvmlDeviceGetMemoryInfo_v2": 1,
    "nvmlDeviceGetUtilizationRates": 1,
    "nvmlDeviceGetEncoderUtilization": 1,
    "nvmlDeviceGetDecoderUtilization": 1,
    "nvmlDeviceGetPerformanceState": 1,
    "nvmlDeviceGetCurrentClocksEventReasons": 1,
    "nvmlDeviceGetBAR1MemoryInfo": 1,
    "nvmlDeviceGetTotalEnergyConsumption": 1,
    "nvmlDeviceGetTemperatureV": 1,
    "nvmlDeviceGetFanSpeed": 1,
    "nvmlDeviceGetPowerUsage": 1,
    "nvmlDeviceGetEnforcedPowerLimit": 1,
    "nvmlDeviceGetClockInfo": 2,  # SM and memory
    "nvmlDeviceGetTotalEccErrors": 1,
    "nvmlDeviceGetComputeRunningProcesses_v3": 1,
    "nvmlDeviceGetGraphicsRunningProcesses_v3": 1,
    "nvmlDeviceGetMPSComputeRunningProcesses_v3": 1,
    "nvmlDeviceGetProcessUtilization": 1,  # only when the GPU has processes
}


def _calls_of(fake: FakeNvml, index: int) -> Counter[str]:
    return Counter({fn: n for (fn, i), n in fake.calls.items() if i == index})


def test_a_steady_state_poll_asks_each_query_once(fake_nvml: FakeNvml) -> None:
    clock = Clock()
    src = NvmlSource.open(with_host=False, pcie_interval_s=2.0, slow_interval_s=30.0, clock=clock)
    src.poll()
    src._pcie.join(5)
    clock.now += 1.0
    before = _calls_of(fake_nvml, 0)
    src.poll()
    src._pcie.join(5)
    assert _calls_of(fake_nvml, 0) - before == Counter(PER_POLL)
    src.close()


def test_calls_over_a_minute_at_one_second(fake_nvml: FakeNvml) -> None:
    """60 polls, 1 s apart: PCIe every 2 s, slow facts every 30 s, static facts once."""
    clock = Clock()
    src = NvmlSource.open(with_host=False, pcie_interval_s=2.0, slow_interval_s=30.0, clock=clock)
    for _ in range(60):
        src.poll()
        src._pcie.join(5)
        clock.now += 1.0
    calls = _calls_of(fake_nvml, 0)
    per_poll = sum(PER_POLL.values())
    assert calls["nvmlDeviceGetPcieThroughput"] == 60  # rx + tx, 30 times
    assert calls["nvmlDeviceGetCurrPcieLinkGeneration"] == 30
    assert calls["nvmlDeviceGetPersistenceMode"] == 2
    assert calls["nvmlDeviceGetEccMode"] == 1
    # open()'s memory and BAR1 readings serve the first poll
    assert calls["nvmlDeviceGetMemoryInfo_v2"] == 60
    # name, UUID, PCI, memory, cc, arch, power limit/default/range, max clocks x2, MIG, ECC,
    # slowdown temperature, max PCIe generation and width, BAR1, GPM support (this GPU has
    # none: never asked again)
    static = 18
    total = sum(calls.values())
    # 60 polls of PER_POLL (less the two readings reused), PCIe 4 calls x 30, slow 3 x 2
    assert total == static + 60 * per_poll - 2 + 4 * 30 + 3 * 2
    src.close()


def _table(snap: Snapshot) -> str:
    return render(dataclasses.replace(snap, timestamp=0.0), color=False, width=None)


def _faulty(fake: FakeNvml) -> None:
    g0, g1 = fake.gpus
    g0.errors["nvmlDeviceGetFanSpeed"] = pynvml.NVML_ERROR_NOT_SUPPORTED
    g0.errors["nvmlDeviceGetComputeRunningProcesses_v3"] = pynvml.NVML_ERROR_NOT_SUPPORTED
    g0.errors["nvmlDeviceGetEnforcedPowerLimit"] = pynvml.NVML_ERROR_NOT_SUPPORTED
    g0.reasons = 0x4 | 0x40
    g1.mig = pynvml.NVML_DEVICE_MIG_ENABLE
    g1.migs = [FakeMig(parent=g1, index=0, gpu_instance=1)]
    g1.instances = {2001: (1, 0)}


def _lost(fake: FakeNvml) -> None:
    fake.gpus[1].lost = True


def _v1_memory(fake: FakeNvml) -> None:
    fake.missing.add("nvmlDeviceGetMemoryInfo_v2")


@pytest.mark.parametrize("setup", [None, _faulty, _lost, _v1_memory])
def test_table_detail_prints_the_same_table(fake_nvml: FakeNvml, setup: object) -> None:
    if callable(setup):
        setup(fake_nvml)
    full_src = NvmlSource.open(with_host=False)
    full = full_src.poll()
    full_src.close()
    fake_nvml.calls.clear()
    table_src = NvmlSource.open(with_host=False, detail="table")
    table = table_src.poll()
    table_src.close()
    assert _table(table) == _table(full)
    asked = {fn for fn, where in fake_nvml.calls if not isinstance(where, tuple)}
    # nothing the table does not print (MIG lines print their BAR1: MIG handles are apart)
    for fn in (
        "nvmlDeviceGetPcieThroughput",
        "nvmlDeviceGetProcessUtilization",
        "nvmlDeviceGetBAR1MemoryInfo",
        "nvmlDeviceGetTotalEnergyConsumption",
        "nvmlDeviceGetPersistenceMode",
        "nvmlDeviceGetUUID",
        "nvmlDeviceGetClockInfo",
    ):
        assert fn not in asked, fn


def test_table_detail_call_count(fake_nvml: FakeNvml) -> None:
    src = NvmlSource.open(with_host=False, detail="table")
    src.poll()
    src.close()
    calls = _calls_of(fake_nvml, 0)
    # open: name, memory, power limit, MIG mode, GPM support (the table prints SMs busy where a
    # GPU has GPM); poll: memory (reused), util, temperature, fan, power, limit, P-state,
    # throttle, three process lists
    assert sum(calls.values()) == 5 + 10
