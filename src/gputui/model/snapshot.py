"""The one snapshot type every source produces and every view renders.

Frozen slotted records (`model/record.py`: a dataclass's interface without
the dataclasses module's ~40 ms of import and class building) rather than
pydantic models: a snapshot is built on every poll (8 GPUs x ~30 fields +
processes), and `gputui snapshot` must not pay pydantic's ~110 ms import. The
pydantic mirror used for the documented JSON schema lives in
`model/schema.py`. `dataclasses.replace` and `fields` work on these types;
`record.replace` and `record.field_names` do the same without importing it.

Conventions:
- `None` means "not available" (unsupported, no permission, unknown). It is
  never replaced by 0: the views print `N/A`.
- GPM's four figures (`sm_active_pct`, ...) exist only on GPUs that have GPM; elsewhere
  they stay None and the views draw nothing for them (not even N/A).
- Sizes are bytes, clocks MHz, power watts, energy joules, temperatures
  Celsius, PCIe throughput KiB/s (NVML's unit), percentages 0-100.
- Static facts (what only a reboot, a reset or an administrator changes rarely:
  limits, link maxima, ECC and MIG mode) are in `DeviceInfo`, read once;
  what can change while gputui runs is in `DeviceSample`, read every poll.
"""

from __future__ import annotations

from gputui.model.record import record

# The `unsupported` name of the compute process list (the NVML source's query key).
PROCESS_LIST = "processes"


@record
class DeviceInfo:
    """Static facts about one GPU, read once when the source opens."""

    index: int
    name: str
    uuid: str | None = None
    pci_bus_id: str | None = None
    memory_total: int | None = None
    compute_capability: str | None = None  # "8.6"
    architecture: str | None = None  # NVML's own answer, e.g. "ampere"
    power_limit_w: float | None = None
    max_sm_clock_mhz: int | None = None
    max_mem_clock_mhz: int | None = None
    mig_mode: bool | None = None
    ecc_mode: bool | None = None  # ECC enabled now (a change needs a reboot)
    power_default_limit_w: float | None = None
    power_min_limit_w: float | None = None  # the range an administrator may set
    power_max_limit_w: float | None = None
    pcie_max_gen: int | None = None  # the link's maximum generation and width (lanes)
    pcie_max_width: int | None = None
    bar1_total: int | None = None  # bytes of the BAR1 aperture (CPU-mapped GPU memory)
    temp_slowdown_c: int | None = None  # NVML's slowdown threshold: clocks drop from here


# NVML compute modes, by the names `nvidia-smi -c` uses.
COMPUTE_MODES = ("default", "exclusive_thread", "prohibited", "exclusive_process")

# GPM's figures, on DeviceSample and MigDevice alike (None on a GPU without GPM).
GPM_FIELDS = ("sm_active_pct", "sm_occupancy_pct", "tensor_active_pct", "dram_active_pct")

# Clock event ("throttle") reason bits, pynvml's nvmlClocksEventReason* values, and the
# names `DeviceSample.throttle_reasons` holds: the NVML source decodes by them, the
# exporter publishes one series per name.
THROTTLE_REASONS: tuple[tuple[int, str], ...] = (
    (0x001, "idle"),
    (0x002, "app_clocks"),
    (0x004, "sw_power_cap"),
    (0x008, "hw_slowdown"),
    (0x010, "sync_boost"),
    (0x020, "sw_thermal"),
    (0x040, "hw_thermal"),
    (0x080, "hw_power_brake"),
    (0x100, "display_clocks"),
    (0x200, "board_limit"),
    (0x400, "reliability"),
)


@record
class MigDevice:
    """One MIG device (a GPU instance with its compute instance) of a GPU in MIG mode.

    NVML gives a MIG device its own memory and BAR1 but no utilization (the
    query is NotSupported on MIG handles, `nvidia-smi` shows N/A): those stay None.
    """

    index: int  # MIG device index on its parent, 0..
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None
    name: str | None = None  # NVML's name, e.g. "NVIDIA A100-SXM4-80GB MIG 3g.40gb"
    profile: str | None = None  # "3g.40gb", from the name
    uuid: str | None = None  # "MIG-..."
    memory_total: int | None = None
    memory_used: int | None = None
    memory_free: int | None = None
    bar1_total: int | None = None
    bar1_used: int | None = None
    utilization_gpu: int | None = None
    utilization_memory: int | None = None
    # GPM (Hopper and later; None where the GPU has none), percent over the last interval:
    # SMs busy, warps resident vs the maximum, tensor pipes active, DRAM bandwidth used.
    sm_active_pct: float | None = None
    sm_occupancy_pct: float | None = None
    tensor_active_pct: float | None = None
    dram_active_pct: float | None = None


@record
class DeviceSample:
    """What one poll read from one GPU."""

    utilization_gpu: int | None = None
    utilization_memory: int | None = None
    memory_used: int | None = None
    memory_free: int | None = None
    memory_total: int | None = None
    memory_reserved: int | None = None
    temperature_c: int | None = None
    fan_pct: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    performance_state: int | None = None  # 0 for P0 ... 15
    pcie_rx_kbs: int | None = None
    pcie_tx_kbs: int | None = None
    encoder_util: int | None = None
    decoder_util: int | None = None
    throttle_reasons: tuple[str, ...] | None = None  # short names, () when not throttling
    ecc_volatile_uncorrected: int | None = None
    persistence_mode: bool | None = None
    display_active: bool | None = None  # a display is initialised on this GPU
    compute_mode: str | None = None  # one of COMPUTE_MODES
    pcie_gen: int | None = None  # current link generation and width (they drop at idle)
    pcie_width: int | None = None
    bar1_used: int | None = None  # bytes
    energy_j: float | None = None  # joules since the driver was (re)loaded
    # GPM (Hopper and later; None where the GPU has none), percent over the last interval:
    # SMs busy, warps resident vs the maximum, tensor pipes active, DRAM bandwidth used.
    sm_active_pct: float | None = None
    sm_occupancy_pct: float | None = None
    tensor_active_pct: float | None = None
    dram_active_pct: float | None = None


@record
class DeviceSnapshot:
    """One GPU in one poll: its static facts, what the poll read, or why it could not."""

    info: DeviceInfo
    sample: DeviceSample | None = None
    failed: str | None = None  # human reason when the device failed hard (e.g. GPU is lost)
    unsupported: frozenset[str] = frozenset()  # field names the device said it cannot report
    mig_devices: tuple[MigDevice, ...] = ()  # in MIG index order; () when MIG is off

    @property
    def index(self) -> int:
        return self.info.index

    def mig_device(self, gpu_instance_id: int | None) -> MigDevice | None:
        """The MIG device of a GPU instance id (a process's), or None for the whole GPU."""
        if gpu_instance_id is None:
            return None
        return next((m for m in self.mig_devices if m.gpu_instance_id == gpu_instance_id), None)

    @property
    def processes_unsupported(self) -> bool:
        """NVML cannot list this GPU's compute processes: an empty list means "unknown"."""
        return PROCESS_LIST in self.unsupported


@record
class GpuProcess:
    """A process holding a context on a GPU, with what the host knows of it.

    Host fields stay `None` when psutil cannot see or read the PID (another PID
    namespace, another user's process under hidepid, or it just exited): the
    process is still listed, with `host_visible=False`.
    """

    gpu_index: int
    pid: int
    type: str  # "compute", "graphics", "compute+graphics" or "mps"
    gpu_memory: int | None = None
    sm_util: int | None = None
    mem_util: int | None = None
    user: str | None = None
    name: str | None = None
    cmdline: tuple[str, ...] | None = None
    cpu_percent: float | None = None
    rss: int | None = None
    running_s: float | None = None
    container: str | None = None  # docker/containerd id (short) or "k8s:namespace/pod"
    container_pid: int | None = None  # the PID inside the container (NSpid)
    host_visible: bool = True
    gpu_instance_id: int | None = None  # MIG: the GPU instance it runs in (None: whole GPU)
    compute_instance_id: int | None = None
    mig_index: int | None = None  # MIG: the index of that MIG device on its GPU (model/mig.py)

    @property
    def command(self) -> str | None:
        if self.cmdline:
            return " ".join(self.cmdline)
        return self.name


@record
class HostSnapshot:
    """The machine the GPUs are in, in one poll: CPU, memory, swap and load."""

    hostname: str
    cpu_percent: float | None = None
    per_cpu_percent: tuple[float, ...] = ()
    load_average: tuple[float, float, float] | None = None
    memory_total: int | None = None
    memory_used: int | None = None
    memory_available: int | None = None
    swap_total: int | None = None
    swap_used: int | None = None


# What an NVML event says happened (sources/nvml/events.py): an XID error, a corrected
# (single-bit) or uncorrected (double-bit) ECC error, a P-state or clock change.
EVENT_KINDS = ("xid", "ecc_sbe", "ecc_dbe", "pstate", "clock")


@record
class GpuEvent:
    """One NVML event, read in the poll that drained it: events are moments, not levels.

    NVML gives no time with an event: `timestamp` is the time of the poll that read it
    (at most one interval late). `data` is the XID code for an XID, else 0.
    """

    timestamp: float
    gpu_index: int
    kind: str  # one of EVENT_KINDS
    data: int = 0
    gpu_instance_id: int | None = None  # MIG: the GPU instance NVML named, else None
    compute_instance_id: int | None = None


@record
class Snapshot:
    """One poll of every GPU, its processes and the host: what every view renders."""

    timestamp: float  # Unix time of the poll
    source: str  # "nvml" or "simulated"
    devices: tuple[DeviceSnapshot, ...]
    processes: tuple[GpuProcess, ...] = ()
    host: HostSnapshot | None = None
    driver_version: str | None = None
    cuda_driver_version: str | None = None  # "12.4"
    nvml_version: str | None = None
    notices: tuple[str, ...] = ()  # plain-words remarks, shown once
    events: tuple[GpuEvent, ...] = ()  # NVML events drained by this poll; () without any

    @property
    def simulated(self) -> bool:
        return self.source != "nvml"
