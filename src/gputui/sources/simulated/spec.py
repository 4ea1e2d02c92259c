"""A simulated machine as a scenario file describes it, once validated (scenario.py).

Plain frozen records: the simulator (source.py, gpu.py, process.py) reads them and never
sees the TOML.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class HostSpec:
    cpu_count: int = 16
    memory_total: int = 64 << 30
    swap_total: int = 8 << 30
    swap_used: int = 0
    base_memory_used: int = 6 << 30
    base_cpu_percent: float = 3.0  # whole-machine % from everything that is not a GPU job


@dataclass(frozen=True, slots=True)
class MigSpec:
    """One MIG device of a GPU in MIG mode (a GPU instance with one compute instance)."""

    profile: str  # "3g.40gb"
    memory_total: int
    gpu_instance_id: int
    compute_instance_id: int = 0
    uuid: str = ""
    bar1_total: int = 0


@dataclass(frozen=True, slots=True)
class GpuSpec:
    name: str
    memory_total: int
    power_limit_w: float
    max_sm_clock_mhz: int
    max_mem_clock_mhz: int
    uuid: str
    pci_bus_id: str
    compute_capability: str | None = None
    architecture: str | None = None
    memory_reserved: int = 0
    idle_power_w: float = 0.0
    idle_sm_clock_mhz: int = 210
    idle_mem_clock_mhz: int = 405
    temp_idle_c: float = 30.0
    temp_at_limit_c: float = 80.0
    load_pstate: int = 0
    mig_mode: bool | None = None
    unsupported: frozenset[str] = frozenset()
    lost_after_s: float | None = None
    persistence_mode: bool = True
    display_active: bool = False
    compute_mode: str = "default"
    ecc_mode: bool = True
    power_default_limit_w: float | None = None  # None: the power limit
    power_min_limit_w: float | None = None  # None: 30 % of the power limit
    power_max_limit_w: float | None = None  # None: the power limit
    pcie_max_gen: int = 4
    pcie_max_width: int = 16
    pcie_idle_gen: int = 1  # links drop to a lower generation when idle, to save power
    bar1_total: int = 256 << 20
    encoder_util: int = 0
    decoder_util: int = 0
    energy_at_start_j: float = 0.0
    mig: tuple[MigSpec, ...] = ()


@dataclass(frozen=True, slots=True)
class ProcessSpec:
    gpu: int
    pid: int
    user: str
    cmdline: tuple[str, ...]
    type: str = "compute"
    workload: str = "training"
    start_s: float = 0.0
    end_s: float | None = None
    gpu_memory: int = 1 << 30
    util: float = 90.0  # peak SM utilization this process drives, percent
    cpu_percent: float = 100.0  # host CPU, percent of one core
    rss: int = 2 << 30
    container: str | None = None
    container_pid: int | None = None
    host_visible: bool = True
    mig: int | None = None  # index of the MIG device it runs in, on a GPU in MIG mode
    warmup_s: float = 30.0
    memory_ramp_s: float = 60.0
    eval_every_s: float = 240.0
    eval_s: float = 20.0
    checkpoint_every_s: float = 600.0
    checkpoint_s: float = 12.0
    # GPM (GPUs of compute capability 9.0+): the share of SMs its kernels keep busy while they
    # run; None: its workload's (simulated/gpm.py)
    sm_share: float | None = None


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str  # the file name, for the "SIMULATED (demo.toml)" marker
    seed: int
    hostname: str
    gpus: tuple[GpuSpec, ...]
    processes: tuple[ProcessSpec, ...]
    host: HostSpec
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    nvml_version: str | None = None
    start_timestamp: float | None = None
    notices: tuple[str, ...] = ()
