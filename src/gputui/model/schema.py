"""Pydantic mirror of the `gputui snapshot --json` output, for validation and the JSON Schema.

Kept apart from jsonout.py because pydantic costs ~100 ms to import; only
`gputui snapshot --json-schema` and the tests load this module. Every model
forbids extra keys and tests compare its fields with the dataclasses in
snapshot.py, so the documented schema cannot silently drift from the output.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DeviceInfoModel(_Strict):
    index: int = Field(ge=0, description="NVML device index")
    name: str = Field(description='product name as NVML reports it, e.g. "NVIDIA A100-SXM4-80GB"')
    uuid: str | None = None
    pci_bus_id: str | None = None
    memory_total: int | None = Field(None, description="bytes")
    compute_capability: str | None = Field(None, description='"major.minor", e.g. "8.6"')
    architecture: str | None = Field(None, description='lower case, e.g. "ampere"')
    power_limit_w: float | None = Field(None, description="enforced power limit, watts")
    max_sm_clock_mhz: int | None = None
    max_mem_clock_mhz: int | None = None
    mig_mode: bool | None = None
    ecc_mode: bool | None = Field(None, description="ECC enabled (a change needs a reboot)")
    power_default_limit_w: float | None = Field(None, description="default power limit, watts")
    power_min_limit_w: float | None = Field(None, description="lowest settable limit, watts")
    power_max_limit_w: float | None = Field(None, description="highest settable limit, watts")
    pcie_max_gen: int | None = Field(None, description="maximum PCIe link generation")
    pcie_max_width: int | None = Field(None, description="maximum PCIe link width, lanes")
    bar1_total: int | None = Field(None, description="BAR1 aperture, bytes")
    temp_slowdown_c: int | None = Field(
        None, description="slowdown temperature threshold, Celsius: the driver slows the clocks"
    )


class MigDeviceModel(_Strict):
    index: int = Field(ge=0, description="MIG device index on its parent GPU")
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None
    name: str | None = None
    profile: str | None = Field(None, description='e.g. "3g.40gb"')
    uuid: str | None = Field(None, description='"MIG-..."')
    memory_total: int | None = Field(None, description="bytes")
    memory_used: int | None = Field(None, description="bytes")
    memory_free: int | None = Field(None, description="bytes")
    bar1_total: int | None = Field(None, description="bytes")
    bar1_used: int | None = Field(None, description="bytes")
    utilization_gpu: int | None = Field(None, description="percent; NVML gives none for MIG")
    utilization_memory: int | None = Field(None, description="percent; NVML gives none for MIG")
    sm_active_pct: float | None = Field(
        None, description="GPM: percent of SMs busy over the last interval; null without GPM"
    )
    sm_occupancy_pct: float | None = Field(
        None, description="GPM: percent of the resident-warp maximum; null without GPM"
    )
    tensor_active_pct: float | None = Field(
        None, description="GPM: percent of time the tensor pipes were active; null without GPM"
    )
    dram_active_pct: float | None = Field(
        None, description="GPM: percent of the DRAM bandwidth used; null without GPM"
    )


class DeviceSampleModel(_Strict):
    utilization_gpu: int | None = Field(None, description="percent of time a kernel ran")
    utilization_memory: int | None = Field(None, description="percent of time memory was busy")
    memory_used: int | None = Field(None, description="bytes")
    memory_free: int | None = Field(None, description="bytes")
    memory_total: int | None = Field(None, description="bytes")
    memory_reserved: int | None = Field(None, description="bytes held by the driver")
    temperature_c: int | None = None
    fan_pct: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    performance_state: int | None = Field(None, ge=0, le=15, description="0 for P0 ... 15")
    pcie_rx_kbs: int | None = Field(None, description="KiB/s")
    pcie_tx_kbs: int | None = Field(None, description="KiB/s")
    encoder_util: int | None = None
    decoder_util: int | None = None
    throttle_reasons: list[str] | None = Field(
        None, description="active clock-throttle reasons; [] when not throttling"
    )
    ecc_volatile_uncorrected: int | None = None
    persistence_mode: bool | None = None
    display_active: bool | None = Field(None, description="a display is initialised on the GPU")
    compute_mode: str | None = Field(
        None, description='"default", "exclusive_process", "prohibited" or "exclusive_thread"'
    )
    pcie_gen: int | None = Field(None, description="current PCIe link generation")
    pcie_width: int | None = Field(None, description="current PCIe link width, lanes")
    bar1_used: int | None = Field(None, description="bytes")
    energy_j: float | None = Field(None, description="joules since the driver was loaded")
    sm_active_pct: float | None = Field(
        None, description="GPM: percent of SMs busy over the last interval; null without GPM"
    )
    sm_occupancy_pct: float | None = Field(
        None, description="GPM: percent of the resident-warp maximum; null without GPM"
    )
    tensor_active_pct: float | None = Field(
        None, description="GPM: percent of time the tensor pipes were active; null without GPM"
    )
    dram_active_pct: float | None = Field(
        None, description="GPM: percent of the DRAM bandwidth used; null without GPM"
    )


class DeviceModel(_Strict):
    info: DeviceInfoModel
    sample: DeviceSampleModel | None = Field(description="null when the device failed")
    failed: str | None = Field(description="why the device could not be read at all")
    unsupported: list[str] = Field(description="sample fields this device cannot report, sorted")
    mig_devices: list[MigDeviceModel] = Field(
        default_factory=list, description="MIG devices in index order; [] when MIG is off"
    )


class HostModel(_Strict):
    hostname: str
    cpu_percent: float | None = None
    per_cpu_percent: list[float] = Field(default_factory=list)
    load_average: list[float] | None = Field(None, min_length=3, max_length=3)
    memory_total: int | None = None
    memory_used: int | None = None
    memory_available: int | None = None
    swap_total: int | None = None
    swap_used: int | None = None


class ProcessModel(_Strict):
    gpu_index: int
    pid: int = Field(description="host PID, as NVML reports it")
    type: str = Field(
        pattern=r"^(compute|graphics|mps)(\+(compute|graphics|mps))*$",
        description='"compute", "graphics", "mps", or several joined by "+", e.g. "compute+graphics"',
    )
    gpu_memory: int | None = Field(None, description="bytes")
    sm_util: int | None = None
    mem_util: int | None = None
    user: str | None = None
    name: str | None = None
    cmdline: list[str] | None = None
    cpu_percent: float | None = Field(None, description="percent of one core")
    rss: int | None = Field(None, description="bytes")
    running_s: float | None = Field(None, description="seconds since the process started")
    container: str | None = None
    container_pid: int | None = None
    host_visible: bool = True
    gpu_instance_id: int | None = Field(None, description="MIG GPU instance; null: whole GPU")
    compute_instance_id: int | None = None
    mig_index: int | None = Field(
        None, description='MIG device index on its GPU: "gpu:mig_index" (e.g. "0:2") names it'
    )
    command: str | None = Field(description="cmdline joined by spaces, or the name")


class GpuEventModel(_Strict):
    timestamp: float = Field(description="Unix time of the poll that read the event, seconds")
    gpu_index: int = Field(ge=0, description="NVML device index")
    kind: Literal["xid", "ecc_sbe", "ecc_dbe", "pstate", "clock"]
    data: int = Field(0, ge=0, description="the XID code for an XID, else 0")
    gpu_instance_id: int | None = Field(None, description="MIG GPU instance, else null")
    compute_instance_id: int | None = Field(None, description="MIG compute instance, else null")


class SnapshotModel(_Strict):
    schema_version: Literal[1]
    timestamp: float = Field(description="Unix time of the poll, seconds")
    source: str = Field(description='"nvml" or "simulated"')
    driver_version: str | None
    cuda_driver_version: str | None
    nvml_version: str | None
    notices: list[str]
    host: HostModel | None
    devices: list[DeviceModel]
    processes: list[ProcessModel]
    events: list[GpuEventModel] = Field(
        default_factory=list, description="NVML events read by this poll (XID, ECC, ...)"
    )


def json_schema() -> dict[str, Any]:
    schema = SnapshotModel.model_json_schema()
    schema["title"] = "gputui snapshot"
    return schema
