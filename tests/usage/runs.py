"""Snapshot sequences with scripted values, for the usage tests."""

from __future__ import annotations

from typing import Any

from gputui.model.snapshot import DeviceInfo, DeviceSample, DeviceSnapshot, GpuProcess, Snapshot

GIB = 1 << 30
T0 = 1_800_000_000.0


def device(index: int = 0, *, failed: bool = False, **sample: Any) -> DeviceSnapshot:
    info = DeviceInfo(index=index, name="NVIDIA H100 80GB HBM3", memory_total=80 * GIB)
    if failed:
        return DeviceSnapshot(info=info, failed="GPU is lost")
    values: dict[str, Any] = dict(
        utilization_gpu=50, memory_used=10 * GIB, power_w=100.0, throttle_reasons=()
    )
    values.update(sample)
    return DeviceSnapshot(info=info, sample=DeviceSample(**values))


def process(pid: int, t: float, *, started: float | None = T0 - 100, **kw: Any) -> GpuProcess:
    base: dict[str, Any] = dict(
        type="compute", gpu_memory=GIB, sm_util=50, name="python", user="alice"
    )
    base.update(kw)
    base.setdefault("gpu_index", 0)
    return GpuProcess(pid=pid, running_s=None if started is None else t - started, **base)


def snap(t: float, devices: tuple[DeviceSnapshot, ...], *procs: GpuProcess) -> Snapshot:
    return Snapshot(timestamp=t, source="simulated", devices=devices, processes=procs)
