"""A fleet as one refresh of the cluster source sees it: hosts, their GPUs, their state.

Plain data shared by the reader (sources/prometheus/), the views (render/,
tui/) and fit's cluster ranking (fit/fleet.py), so none of them imports
another's layer to name what it passes around.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from gputui.model.snapshot import (
    DeviceInfo,
    DeviceSample,
    DeviceSnapshot,
    GpuProcess,
    HostSnapshot,
    Snapshot,
)

HostState = Literal["up", "stale", "down"]


@dataclass(frozen=True, slots=True)
class ClusterGpu:
    host: str
    index: int
    name: str
    uuid: str | None
    pci_bus_id: str | None
    sample: DeviceSample | None  # None when the GPU is lost (gputui_gpu_up 0)
    up: bool
    last_seen: float | None  # newest sample's timestamp
    card: str | None = None
    architecture: str | None = None
    throttle_reasons: tuple[str, ...] | None = None
    mig: tuple[MigReading, ...] = ()  # its MIG devices, by GPU instance id; () when none

    @property
    def key(self) -> tuple[str, int]:
        return (self.host, self.index)

    @property
    def memory_total(self) -> int | None:
        s = self.sample
        if s is None:
            return None
        if s.memory_total is not None:
            return s.memory_total
        if s.memory_used is not None and s.memory_free is not None:
            return s.memory_used + s.memory_free + (s.memory_reserved or 0)
        return None

    def device_snapshot(self) -> DeviceSnapshot:
        info = DeviceInfo(
            index=self.index,
            name=self.name,
            uuid=self.uuid,
            pci_bus_id=self.pci_bus_id,
            memory_total=self.memory_total,
            architecture=self.architecture,
        )
        sample = self.sample
        if sample is not None and sample.memory_total is None:
            sample = replace(sample, memory_total=self.memory_total)
        if sample is not None and self.throttle_reasons is not None:
            sample = replace(sample, throttle_reasons=self.throttle_reasons)
        return DeviceSnapshot(info, sample, None if self.up else "GPU is lost")


@dataclass(frozen=True, slots=True)
class ClusterHost:
    name: str
    gpus: tuple[ClusterGpu, ...]
    processes: tuple[GpuProcess, ...] = ()
    state: HostState = "up"
    last_seen: float | None = None
    age_s: float | None = None
    instances: tuple[str, ...] = ()
    exporters: tuple[str, ...] = ()  # "dcgm", "gputui"
    simulated: bool = False  # a gputui exporter serving simulated GPUs

    def snapshot(self, timestamp: float) -> Snapshot:
        """This host as a plain Snapshot (what fit's targets and the JSON output take)."""
        return Snapshot(
            timestamp=self.last_seen or timestamp,
            source="prometheus",
            devices=tuple(g.device_snapshot() for g in self.gpus),
            processes=self.processes,
            host=HostSnapshot(hostname=self.name),
        )


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    timestamp: float
    url: str
    hosts: tuple[ClusterHost, ...]
    requests: int = 0  # HTTP requests this refresh made
    notices: tuple[str, ...] = field(default=())

    @property
    def gpus(self) -> tuple[ClusterGpu, ...]:
        return tuple(g for h in self.hosts for g in h.gpus)


@dataclass(frozen=True, slots=True)
class MigReading:
    """One MIG instance as dcgm-exporter reports it (sizes in bytes). `mig_index`: its MIG
    device index, where a gputui exporter names it (its `mig` label); dcgm-exporter does not."""

    host: str
    gpu: int
    gpu_instance_id: int
    profile: str | None
    memory_free: int
    memory_used: int
    mig_index: int | None = None

    @property
    def memory_total(self) -> int:
        return self.memory_free + self.memory_used


# (host, gpu index) -> that GPU's MIG instances, by GPU instance id.
MigReadings = dict[tuple[str, int], list[MigReading]]
