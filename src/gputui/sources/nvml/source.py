"""The real telemetry source: NVIDIA GPUs through NVML (`pynvml` from nvidia-ml-py).

What is read when:
- `open()`: nvmlInit, then once per source the driver, CUDA driver and NVML
  versions, and once per device its static facts (name, UUID, PCI bus id,
  memory total, compute capability, architecture, power management limit and
  its default/min/max, max SM/memory clocks, max PCIe generation and width,
  BAR1 size, ECC mode, MIG mode) and, in MIG mode, its MIG devices (nvml_mig.py).
- `poll()`: per device utilization, memory (v2 struct where the driver has it,
  so `reserved` is apart from `used`; else v1), temperature, fan, power and
  enforced limit, SM/memory clocks, P-state, encoder/decoder utilization,
  clock event (throttle) reasons, volatile uncorrected ECC errors, BAR1 used,
  the energy counter, each MIG device's memory, and the compute/graphics/MPS
  process lists (with their MIG GPU/compute instance ids) and per-process
  SM/memory utilization. The first poll takes the memory and BAR1 that
  `open()` has just read instead of asking again.
- Every `slow_interval_s` (30 s; and at the first poll): persistence mode,
  display active and compute mode. They change only when an administrator
  runs `nvidia-smi -pm`/`-c` or a display server starts on the GPU, so a
  change shows within 30 s; asking each poll was 3 calls per GPU per second.
- With PCIe throughput, every `pcie_interval_s` (2 s) off the poll path
  (`PcieSampler`, nvml_pcie.py): rx/tx and the current link generation and
  width. The link retrains down at idle and up under load, so it is read as
  often as the throughput shown beside it, not once.

`detail="table"` (the text table of `gputui snapshot`) reads only what that
table prints: per device name, MIG mode, memory, utilization, temperature,
fan, power and its limits, P-state, throttle reasons and the process lists
(no per-process utilization, no PCIe, no other facts). The records are
the same; what is not read stays None (N/A), and `--json` and the dashboard
use the default `detail="full"`.

Errors follow one policy, in `DeviceQuery` (nvml_query.py): unsupported
fields are None and never asked again, NoPermission is None for that poll, and
a device that fails hard (GPU lost) is marked failed with a reason while the
others keep updating. A failed device is not polled again (a lost GPU needs a
reset, after which gputui must be restarted). Init failures raise
SourceUnavailable with one human sentence.

MIG: the MIG devices are enumerated once, at open (reconfiguring MIG needs the
GPUs idle; restart gputui after it); each has its own `DeviceQuery`, so a
query NVML does not support on MIG handles (utilization) is asked once.
Processes are listed against the parent GPU with the GPU instance they run in.

`poll()` may be called from any thread (calls are serialized by a lock) and
never touches Textual; the module imports only pynvml and the stdlib, so
`gputui snapshot` starts fast.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

import pynvml

from gputui.core.textsafe import visible
from gputui.model.snapshot import (
    COMPUTE_MODES,
    DeviceInfo,
    DeviceSample,
    DeviceSnapshot,
    GpuProcess,
    MigDevice,
    Snapshot,
)
from gputui.sources.base import SourceUnavailable
from gputui.sources.nvml.procs import ProcessReader
from gputui.sources.nvml.query import DeviceFailed, DeviceQuery, human_reason

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:  # typing only: a Protocol class costs import time on the `snapshot` path
    from collections.abc import Sequence
    from typing import Any, Literal, Protocol

    from gputui.sources.nvml.mig import MigReader
    from gputui.sources.nvml.pcie import PcieSampler
    from gputui.sources.nvml.query import Call

    Detail = Literal["full", "table"]

    from gputui.model.snapshot import HostSnapshot

    class HostSampler(Protocol):
        """What NvmlSource needs of sources/host/source.py's HostSampler (imported only when used)."""

        def sample(self) -> HostSnapshot: ...

        def enrich(self, processes: Sequence[GpuProcess]) -> tuple[GpuProcess, ...]: ...

        def notices(self) -> tuple[str, ...]: ...


_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU
_CLOCK_SM = pynvml.NVML_CLOCK_SM
_CLOCK_MEM = pynvml.NVML_CLOCK_MEM
_PSTATE_UNKNOWN = getattr(pynvml, "NVML_PSTATE_UNKNOWN", 32)
_ARCH_UNKNOWN = getattr(pynvml, "NVML_DEVICE_ARCH_UNKNOWN", 0xFFFFFFFF)

# Clock event ("throttle") reason bits, pynvml's nvmlClocksEventReason* values.
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
_KNOWN_REASON_BITS = 0x7FF


def decode_throttle_reasons(mask: int) -> tuple[str, ...]:
    """Short names of the set bits; idle alone means the GPU is resting, not throttled: ()."""
    if mask == 0 or mask == 0x001:
        return ()
    names = [name for bit, name in THROTTLE_REASONS if mask & bit]
    extra = mask & ~_KNOWN_REASON_BITS
    if extra:
        names.append(f"other_{extra:#x}")
    return tuple(names)


def cuda_version_text(value: int) -> str:
    """NVML's 12040 as "12.4"."""
    return f"{value // 1000}.{value % 1000 // 10}"


def init_failure_reason(exc: BaseException) -> str:
    """One sentence saying why NVML would not start, for the banner and `--source nvml`."""
    code = getattr(exc, "value", None)
    if code == pynvml.NVML_ERROR_LIBRARY_NOT_FOUND:
        return "NVIDIA driver library libnvidia-ml.so.1 not found (no NVIDIA driver installed?)"
    if code == pynvml.NVML_ERROR_DRIVER_NOT_LOADED:
        return "the NVIDIA kernel driver is not loaded (NVML: Driver Not Loaded)"
    if code == pynvml.NVML_ERROR_NO_PERMISSION:
        return (
            "insufficient permissions to use the NVIDIA driver "
            "(NVML: Insufficient Permissions; check access to /dev/nvidia*)"
        )
    if code == pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        return (
            "NVIDIA driver/library version mismatch: libnvidia-ml.so does not match the "
            "loaded kernel module (reboot after a driver update)"
        )
    return f"NVML failed to start: {visible(str(exc))}"


# --- the calls, newest variant first; each takes the handle first -----------------------


def _text(value: Any) -> str:
    """An NVML string (name, UUID, bus id, versions), made safe for a terminal here, once."""
    text = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
    return visible(text)


def _name(h: Any) -> Any:
    return pynvml.nvmlDeviceGetName(h)


def _uuid(h: Any) -> Any:
    return pynvml.nvmlDeviceGetUUID(h)


def _pci(h: Any) -> Any:
    return pynvml.nvmlDeviceGetPciInfo(h)


def _cc(h: Any) -> Any:
    return pynvml.nvmlDeviceGetCudaComputeCapability(h)


def _arch(h: Any) -> Any:
    return pynvml.nvmlDeviceGetArchitecture(h)


def _power_management_limit(h: Any) -> Any:
    return pynvml.nvmlDeviceGetPowerManagementLimit(h)


def _max_clock(h: Any, kind: int) -> Any:
    return pynvml.nvmlDeviceGetMaxClockInfo(h, kind)


def _mig(h: Any) -> Any:
    return pynvml.nvmlDeviceGetMigMode(h)


def _memory_v2(h: Any) -> Any:
    return pynvml.nvmlDeviceGetMemoryInfo(h, pynvml.nvmlMemory_v2)


def _memory_v1(h: Any) -> Any:
    return pynvml.nvmlDeviceGetMemoryInfo(h)


def _utilization(h: Any) -> Any:
    return pynvml.nvmlDeviceGetUtilizationRates(h)


def _temperature_v(h: Any) -> Any:
    return pynvml.nvmlDeviceGetTemperatureV(h, _TEMPERATURE_GPU)


def _temperature(h: Any) -> Any:
    return pynvml.nvmlDeviceGetTemperature(h, _TEMPERATURE_GPU)


def _fan(h: Any) -> Any:
    return pynvml.nvmlDeviceGetFanSpeed(h)


def _power(h: Any) -> Any:
    return pynvml.nvmlDeviceGetPowerUsage(h)


def _enforced_limit(h: Any) -> Any:
    return pynvml.nvmlDeviceGetEnforcedPowerLimit(h)


def _clock(h: Any, kind: int) -> Any:
    return pynvml.nvmlDeviceGetClockInfo(h, kind)


def _pstate(h: Any) -> Any:
    return pynvml.nvmlDeviceGetPerformanceState(h)


def _encoder(h: Any) -> Any:
    return pynvml.nvmlDeviceGetEncoderUtilization(h)


def _decoder(h: Any) -> Any:
    return pynvml.nvmlDeviceGetDecoderUtilization(h)


def _event_reasons(h: Any) -> Any:
    return pynvml.nvmlDeviceGetCurrentClocksEventReasons(h)


def _throttle_reasons(h: Any) -> Any:
    return pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(h)


def _ecc_uncorrected(h: Any) -> Any:
    return pynvml.nvmlDeviceGetTotalEccErrors(
        h, pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_VOLATILE_ECC
    )


def _power_default_limit(h: Any) -> Any:
    return pynvml.nvmlDeviceGetPowerManagementDefaultLimit(h)


def _power_constraints(h: Any) -> Any:
    return pynvml.nvmlDeviceGetPowerManagementLimitConstraints(h)


def _pcie_max_gen(h: Any) -> Any:
    return pynvml.nvmlDeviceGetMaxPcieLinkGeneration(h)


def _pcie_max_width(h: Any) -> Any:
    return pynvml.nvmlDeviceGetMaxPcieLinkWidth(h)


def _bar1(h: Any) -> Any:
    return pynvml.nvmlDeviceGetBAR1MemoryInfo(h)


def _ecc_mode(h: Any) -> Any:
    return pynvml.nvmlDeviceGetEccMode(h)


def _persistence(h: Any) -> Any:
    return pynvml.nvmlDeviceGetPersistenceMode(h)


def _display_active(h: Any) -> Any:
    return pynvml.nvmlDeviceGetDisplayActive(h)


def _compute_mode(h: Any) -> Any:
    return pynvml.nvmlDeviceGetComputeMode(h)


def _energy(h: Any) -> Any:
    return pynvml.nvmlDeviceGetTotalEnergyConsumption(h)


def _driver_version(_h: Any) -> Any:
    return pynvml.nvmlSystemGetDriverVersion()


def _cuda_version(_h: Any) -> Any:
    return pynvml.nvmlSystemGetCudaDriverVersion()


def _nvml_version(_h: Any) -> Any:
    return pynvml.nvmlSystemGetNVMLVersion()


NAME: tuple[Call, ...] = (_name,)
UUID: tuple[Call, ...] = (_uuid,)
PCI: tuple[Call, ...] = (_pci,)
CC: tuple[Call, ...] = (_cc,)
ARCH: tuple[Call, ...] = (_arch,)
POWER_MANAGEMENT_LIMIT: tuple[Call, ...] = (_power_management_limit,)
MAX_CLOCK: tuple[Call, ...] = (_max_clock,)
MIG: tuple[Call, ...] = (_mig,)
MEMORY: tuple[Call, ...] = (_memory_v2, _memory_v1)
UTILIZATION: tuple[Call, ...] = (_utilization,)
TEMPERATURE: tuple[Call, ...] = (_temperature_v, _temperature)
FAN: tuple[Call, ...] = (_fan,)
POWER: tuple[Call, ...] = (_power,)
ENFORCED_LIMIT: tuple[Call, ...] = (_enforced_limit,)
CLOCK: tuple[Call, ...] = (_clock,)
PSTATE: tuple[Call, ...] = (_pstate,)
ENCODER: tuple[Call, ...] = (_encoder,)
DECODER: tuple[Call, ...] = (_decoder,)
THROTTLE: tuple[Call, ...] = (_event_reasons, _throttle_reasons)
ECC: tuple[Call, ...] = (_ecc_uncorrected,)
POWER_DEFAULT_LIMIT: tuple[Call, ...] = (_power_default_limit,)
POWER_CONSTRAINTS: tuple[Call, ...] = (_power_constraints,)
PCIE_MAX_GEN: tuple[Call, ...] = (_pcie_max_gen,)
PCIE_MAX_WIDTH: tuple[Call, ...] = (_pcie_max_width,)
BAR1: tuple[Call, ...] = (_bar1,)
ECC_MODE: tuple[Call, ...] = (_ecc_mode,)
PERSISTENCE: tuple[Call, ...] = (_persistence,)
DISPLAY_ACTIVE: tuple[Call, ...] = (_display_active,)
COMPUTE_MODE: tuple[Call, ...] = (_compute_mode,)
ENERGY: tuple[Call, ...] = (_energy,)


def _arch_names() -> dict[int, str]:
    prefix = "NVML_DEVICE_ARCH_"
    return {
        int(getattr(pynvml, n)): n[len(prefix) :].lower()
        for n in dir(pynvml)
        if n.startswith(prefix) and n != prefix + "UNKNOWN"
    }


# Queries that fill several fields at once.
_KEY_FIELDS: dict[str, tuple[str, ...]] = {
    "memory": ("memory_used", "memory_free", "memory_total", "memory_reserved"),
    "utilization": ("utilization_gpu", "utilization_memory"),
    "bar1": ("bar1_total", "bar1_used"),
    "power_constraints": ("power_min_limit_w", "power_max_limit_w"),
}


class _Device:
    """One GPU's NVML state: its query helper, static info, slow facts and process reader."""

    __slots__ = (
        "index", "query", "info", "failed", "procs", "mig", "slow", "_unsupported",
        "_unsupported_n",
    )

    def __init__(
        self, index: int, query: DeviceQuery | None, info: DeviceInfo, mig: MigReader | None = None
    ) -> None:
        self.index = index
        self.query = query if query is not None else DeviceQuery(None)
        self.info = info
        self.failed: str | None = None
        self.procs = ProcessReader()
        self.mig = mig
        self.slow: tuple[bool | None, bool | None, str | None] = (None, None, None)
        self._unsupported: frozenset[str] = frozenset()
        self._unsupported_n = 0

    def unsupported(self) -> frozenset[str]:
        """Field names NVML said it cannot report (query keys, grouped ones expanded)."""
        current = self.query.unsupported
        if len(current) != self._unsupported_n:
            names: set[str] = set()
            for key in current:
                names.update(_KEY_FIELDS.get(key, (key,)))
            self._unsupported = frozenset(names)
            self._unsupported_n = len(current)
        return self._unsupported


def _mw_to_w(value: Any) -> float | None:
    return None if value is None else value / 1000.0


def _read_info(
    index: int, q: DeviceQuery, archs: dict[int, str], partial: list[Any], detail: Detail = "full"
) -> DeviceInfo:
    """Static facts. `partial` collects what was read, for a device that fails half-way.

    With `detail="table"` only what the snapshot table prints (name, memory total,
    power limit, MIG mode); the rest stays None. Memory and BAR1 are handed on to
    the first poll (`DeviceQuery.hand_on`), which would otherwise ask again at once.
    """
    full = detail == "full"
    name = q.get("name", NAME)
    partial.append(("name", _text(name) if name is not None else "Unknown GPU"))
    if full:
        uuid = q.get("uuid", UUID)
        partial.append(("uuid", None if uuid is None else _text(uuid)))
        pci = q.get("pci_bus_id", PCI)
        partial.append(("pci_bus_id", None if pci is None else _text(pci.busId)))
    mem = q.get("memory", MEMORY)
    q.hand_on("memory", mem)
    partial.append(("memory_total", None if mem is None else int(mem.total)))
    if full:
        cc = q.get("compute_capability", CC)
        partial.append(("compute_capability", None if cc is None else f"{cc[0]}.{cc[1]}"))
        arch = q.get("architecture", ARCH)
        partial.append(
            ("architecture", None if arch is None or arch == _ARCH_UNKNOWN else archs.get(int(arch)))
        )
    partial.append(
        ("power_limit_w", _mw_to_w(q.get("power_management_limit", POWER_MANAGEMENT_LIMIT)))
    )
    if full:
        partial.append(("max_sm_clock_mhz", q.get("max_sm_clock_mhz", MAX_CLOCK, _CLOCK_SM)))
        partial.append(("max_mem_clock_mhz", q.get("max_mem_clock_mhz", MAX_CLOCK, _CLOCK_MEM)))
    mig = q.get("mig_mode", MIG)
    partial.append(
        ("mig_mode", None if mig is None else bool(mig[0] == pynvml.NVML_DEVICE_MIG_ENABLE))
    )
    if not full:
        return DeviceInfo(index=index, **dict(partial))
    ecc = q.get("ecc_mode", ECC_MODE)
    partial.append(("ecc_mode", None if ecc is None else bool(ecc[0] == pynvml.NVML_FEATURE_ENABLED)))
    partial.append(
        ("power_default_limit_w", _mw_to_w(q.get("power_default_limit_w", POWER_DEFAULT_LIMIT)))
    )
    limits = q.get("power_constraints", POWER_CONSTRAINTS)
    partial.append(("power_min_limit_w", None if limits is None else _mw_to_w(limits[0])))
    partial.append(("power_max_limit_w", None if limits is None else _mw_to_w(limits[1])))
    partial.append(("pcie_max_gen", q.get("pcie_max_gen", PCIE_MAX_GEN)))
    partial.append(("pcie_max_width", q.get("pcie_max_width", PCIE_MAX_WIDTH)))
    bar1 = q.get("bar1", BAR1)
    q.hand_on("bar1", bar1)
    partial.append(("bar1_total", None if bar1 is None else int(_field(bar1, "bar1Total"))))
    return DeviceInfo(index=index, **dict(partial))


def _enabled(value: Any) -> bool | None:
    """An nvmlEnableState_t as a bool; None stays N/A."""
    return None if value is None else bool(value == pynvml.NVML_FEATURE_ENABLED)


def _compute_mode_name(value: Any) -> str | None:
    if value is None:
        return None
    mode = int(value)
    return COMPUTE_MODES[mode] if 0 <= mode < len(COMPUTE_MODES) else f"mode {mode}"


# Reads a ctypes field without pynvml's Python-level __getattribute__ (3x faster; see nvml_procs).
_field = object.__getattribute__


def _read_slow(q: DeviceQuery) -> tuple[bool | None, bool | None, str | None]:
    """Persistence mode, display active, compute mode: read every SLOW_INTERVAL_S."""
    return (
        _enabled(q.get("persistence_mode", PERSISTENCE)),
        _enabled(q.get("display_active", DISPLAY_ACTIVE)),
        _compute_mode_name(q.get("compute_mode", COMPUTE_MODE)),
    )


_NO_LINK: tuple[None, None] = (None, None)


def _read_sample(
    q: DeviceQuery,
    pcie: tuple[int | None, int | None],
    link: tuple[int | None, int | None] = _NO_LINK,
    slow: tuple[bool | None, bool | None, str | None] = (None, None, None),
) -> DeviceSample:
    get = q.get
    enc = get("encoder_util", ENCODER)
    dec = get("decoder_util", DECODER)
    bar1 = get("bar1", BAR1)
    energy = get("energy_j", ENERGY)
    return DeviceSample(
        **_table_fields(q),
        sm_clock_mhz=get("sm_clock_mhz", CLOCK, _CLOCK_SM),
        mem_clock_mhz=get("mem_clock_mhz", CLOCK, _CLOCK_MEM),
        pcie_rx_kbs=pcie[0],
        pcie_tx_kbs=pcie[1],
        encoder_util=None if enc is None else int(enc[0]),
        decoder_util=None if dec is None else int(dec[0]),
        ecc_volatile_uncorrected=get("ecc_volatile_uncorrected", ECC),
        persistence_mode=slow[0],
        display_active=slow[1],
        compute_mode=slow[2],
        pcie_gen=link[0],
        pcie_width=link[1],
        bar1_used=None if bar1 is None else int(_field(bar1, "bar1Used")),
        energy_j=None if energy is None else energy / 1000.0,
    )


def _table_fields(q: DeviceQuery) -> dict[str, Any]:
    """The sample fields the snapshot's text table prints: every poll reads these."""
    get = q.get
    mem = get("memory", MEMORY)
    util = get("utilization", UTILIZATION)
    pstate = get("performance_state", PSTATE)
    reasons = get("throttle_reasons", THROTTLE)
    return {
        "utilization_gpu": None if util is None else _field(util, "gpu"),
        "utilization_memory": None if util is None else _field(util, "memory"),
        "memory_used": None if mem is None else _field(mem, "used"),
        "memory_free": None if mem is None else _field(mem, "free"),
        "memory_total": None if mem is None else _field(mem, "total"),
        "memory_reserved": None if mem is None else _reserved(mem, q),
        "temperature_c": get("temperature_c", TEMPERATURE),
        "fan_pct": get("fan_pct", FAN),
        "power_w": _mw_to_w(get("power_w", POWER)),
        "power_limit_w": _mw_to_w(get("power_limit_w", ENFORCED_LIMIT)),
        "performance_state": None if pstate is None or pstate == _PSTATE_UNKNOWN else int(pstate),
        "throttle_reasons": None if reasons is None else decode_throttle_reasons(int(reasons)),
    }


def _read_table_sample(q: DeviceQuery) -> DeviceSample:
    """What the snapshot's text table prints of a poll (`detail="table"`), nothing more."""
    return DeviceSample(**_table_fields(q))


def _reserved(mem: Any, q: DeviceQuery) -> int | None:
    """Only the v2 struct reports reserved memory apart; v1 counts it as used."""
    reserved = getattr(mem, "reserved", None)
    if reserved is None:
        q.unsupported.add("memory_reserved")
        return None
    return int(reserved)


_NO_PCIE: tuple[None, None] = (None, None)

SLOW_INTERVAL_S = 30.0  # persistence, display active, compute mode: see the module docstring


class NvmlSource:
    """Telemetry from the NVIDIA driver. Build with `NvmlSource.open()`; see the module docstring."""

    name = "nvml"

    def __init__(
        self,
        devices: list[_Device],
        versions: tuple[str | None, str | None, str | None],
        host: HostSampler | None,
        pcie: PcieSampler | None,
        *,
        detail: Detail = "full",
        slow_interval_s: float = SLOW_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._devices = devices
        self._driver_version, self._cuda_version, self._nvml_version = versions
        self._host = host
        self._pcie = pcie
        self._detail = detail
        self._slow_interval_s = slow_interval_s
        self._slow_at: float | None = None
        self._clock = clock
        self._lock = threading.Lock()
        self._closed = False

    @classmethod
    def open(
        cls,
        with_host: bool = True,
        *,
        detail: Detail = "full",
        pcie_interval_s: float = 2.0,
        slow_interval_s: float = SLOW_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> NvmlSource:
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise SourceUnavailable(init_failure_reason(exc)) from None
        try:
            count = int(pynvml.nvmlDeviceGetCount())
        except pynvml.NVMLError as exc:
            _shutdown_quietly()
            raise SourceUnavailable(f"NVML could not count the GPUs: {visible(str(exc))}") from None
        if count == 0:
            _shutdown_quietly()
            raise SourceUnavailable("NVML is working but reports no NVIDIA GPU")
        try:
            system = DeviceQuery(None)
            versions = (
                _optional_text(system, "driver_version", (_driver_version,)),
                _optional_cuda(system),
                _optional_text(system, "nvml_version", (_nvml_version,)),
            )
            archs = _arch_names() if detail == "full" else {}
            devices = [_open_device(i, archs, detail) for i in range(count)]
            host: HostSampler | None = None
            if with_host:
                host = _open_host_sampler()
        except BaseException:
            _shutdown_quietly()  # do not leave NVML initialized behind a failed open
            raise
        return cls(
            devices,
            versions,
            host,
            _pcie_sampler(pcie_interval_s, clock) if detail == "full" else None,
            detail=detail,
            slow_interval_s=slow_interval_s,
            clock=clock,
        )

    def poll(self) -> Snapshot:
        with self._lock:
            if self._closed:
                raise RuntimeError("NvmlSource.poll() after close()")
            devices = self._devices
            full = self._detail == "full"
            slow_due = False
            pcie_values: dict[int, tuple[int | None, int | None]] = {}
            links: dict[int, tuple[int | None, int | None]] = {}
            if full and self._pcie is not None:
                self._pcie.maybe_refresh([(d.index, d.query) for d in devices if d.failed is None])
                pcie_values, links = self._pcie.values, self._pcie.links
            if full:
                now = self._clock()
                slow_due = self._slow_at is None or now - self._slow_at >= self._slow_interval_s
                if slow_due:
                    self._slow_at = now
            snaps: list[DeviceSnapshot] = []
            processes: list[GpuProcess] = []
            for d in devices:
                sample = None
                migs: tuple[MigDevice, ...] = ()
                if d.failed is None:
                    try:
                        if not full:
                            sample = _read_table_sample(d.query)
                        else:
                            if slow_due:
                                d.slow = _read_slow(d.query)
                            sample = _read_sample(
                                d.query,
                                pcie_values.get(d.index, _NO_PCIE),
                                links.get(d.index, _NO_LINK),
                                d.slow,
                            )
                        processes.extend(d.procs.read(d.query, d.index, utilization=full))
                        if d.mig is not None:
                            migs = d.mig.read()
                    except DeviceFailed as exc:
                        d.failed = exc.reason
                        sample = None
                        migs = ()
                snaps.append(
                    DeviceSnapshot(
                        info=d.info,
                        sample=sample,
                        failed=d.failed,
                        unsupported=d.unsupported(),
                        mig_devices=migs,
                    )
                )
            notices = self._notices()
            host = None
            procs: tuple[GpuProcess, ...] = tuple(processes)
            if self._host is not None:
                host = self._host.sample()
                procs = self._host.enrich(procs)
                notices = notices + tuple(self._host.notices())
            return Snapshot(
                timestamp=time.time(),
                source="nvml",
                devices=tuple(snaps),
                processes=procs,
                host=host,
                driver_version=self._driver_version,
                cuda_driver_version=self._cuda_version,
                nvml_version=self._nvml_version,
                notices=notices,
            )

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._pcie is not None:
                self._pcie.join(timeout=2.0)
                self._pcie.close()
            _shutdown_quietly()

    def _notices(self) -> tuple[str, ...]:
        out: list[str] = []
        denied = sorted({k for d in self._devices for k in d.query.no_permission})
        if denied:
            out.append("Some GPU values need more permissions and show N/A: " + ", ".join(denied))
        unlisted = [
            str(d.index)
            for d in self._devices
            if d.info.mig_mode and d.failed is None and (d.mig is None or not d.mig.devices)
        ]
        if unlisted:
            out.append(
                f"MIG is enabled on GPU {', '.join(unlisted)} but NVML lists no MIG device "
                "there (none configured, or not visible with these permissions)"
            )
        return tuple(out)


def _open_device(index: int, archs: dict[int, str], detail: Detail = "full") -> _Device:
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    except pynvml.NVMLError as exc:
        d = _Device(index, None, DeviceInfo(index=index, name="Unknown GPU"))
        d.failed = f"cannot open this GPU: {human_reason(exc)}"
        return d
    q = DeviceQuery(handle)
    partial: list[Any] = []
    try:
        info = _read_info(index, q, archs, partial, detail)
        mig = None
        if info.mig_mode:
            from gputui.sources.nvml.mig import MigReader, open_mig_devices

            mig = MigReader(open_mig_devices(q))
    except DeviceFailed as exc:
        fields = dict(partial)
        fields.setdefault("name", "Unknown GPU")
        d = _Device(index, q, DeviceInfo(index=index, **fields))
        d.failed = exc.reason
        return d
    return _Device(index, q, info, mig)


def _pcie_sampler(interval_s: float, clock: Callable[[], float]) -> PcieSampler:
    """nvml_pcie.py is imported only where PCIe is read (not for the snapshot's table)."""
    from gputui.sources.nvml.pcie import PcieSampler

    return PcieSampler(interval_s, clock)


def _optional_text(system: DeviceQuery, key: str, calls: tuple[Call, ...]) -> str | None:
    try:
        value = system.get(key, calls)
    except DeviceFailed:
        return None
    return None if value is None else _text(value)


def _optional_cuda(system: DeviceQuery) -> str | None:
    try:
        value = system.get("cuda_driver_version", (_cuda_version,))
    except DeviceFailed:
        return None
    return None if value is None else cuda_version_text(int(value))


def _open_host_sampler() -> HostSampler:
    """Linux: /proc read directly (sources/host/procfs.py: no psutil import, a third of the
    per-poll cost); elsewhere psutil (sources/host/source.py, imported only when wanted)."""
    import os

    if os.path.isfile("/proc/self/stat"):
        from gputui.sources.host.procfs import ProcfsHost

        return ProcfsHost()
    import importlib

    module = importlib.import_module("gputui.sources.host.source")
    sampler: HostSampler = module.HostSampler()
    return sampler


def _shutdown_quietly() -> None:
    with contextlib.suppress(pynvml.NVMLError):
        pynvml.nvmlShutdown()
