"""Snapshot sequences with scripted values, for the usage tests."""

from __future__ import annotations

from typing import Any

from gputui.model.alert import AlertChange
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


class ListRecording:
    """A stand-in for the recording store's reader (`gputui.recording.reader.open_recording`'s
    `Recording`: span, snapshots(since, until), meta) over snapshots held in a list."""

    def __init__(
        self,
        snaps: list[Snapshot],
        meta: dict[str, Any] | None = None,
        alerts: list[AlertChange] | None = None,
    ) -> None:
        self._snaps = snaps
        self.meta = meta or {}
        self._alerts = alerts or []

    def alerts(self, since: float | None = None, until: float | None = None) -> list[AlertChange]:
        return [
            a
            for a in self._alerts
            if (since is None or a.timestamp >= since) and (until is None or a.timestamp <= until)
        ]

    def span(self) -> tuple[float, float] | None:
        if not self._snaps:
            return None
        return self._snaps[0].timestamp, self._snaps[-1].timestamp

    def snapshots(self, since: float | None = None, until: float | None = None) -> Any:
        for s in self._snaps:
            if (since is None or s.timestamp >= since) and (until is None or s.timestamp <= until):
                yield s


def simulated_run(scenario: str, seconds: int, tmp: Any) -> list[Snapshot]:
    """One snapshot a second for `seconds` from a scenario file's text (t = 0 at T0 - ...)."""
    from gputui.sources.simulated.source import SimulatedSource

    path = tmp / "scenario.toml"
    path.write_text(scenario)
    source = SimulatedSource.from_scenario(path, clock=lambda: 0.0)
    return [source.snapshot_at(float(t)) for t in range(seconds)]


# A training job with scripted memory: it climbs to 10 GiB over 30 s and stays there; a
# second job on the other GPU starts at 40 s and ends at 80 s.
TRAINING = """
start_timestamp = 1800000000

[[gpu]]
name = "NVIDIA GeForce RTX 3090"
memory_total = "24 GiB"
power_limit_w = 350
max_sm_clock_mhz = 1995
max_mem_clock_mhz = 9751

[[gpu]]
name = "NVIDIA GeForce RTX 3090"
memory_total = "24 GiB"
power_limit_w = 350
max_sm_clock_mhz = 1995
max_mem_clock_mhz = 9751

[[process]]
gpu = 0
pid = 4242
command = "python train.py"
gpu_memory = "10 GiB"
memory_ramp_s = 30
warmup_s = 10

[[process]]
gpu = 1
pid = 5151
command = "python eval.py"
gpu_memory = "3 GiB"
memory_ramp_s = 10
start_s = 40
end_s = 80
"""
