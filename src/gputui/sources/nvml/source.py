"""The real telemetry source: NVIDIA GPUs through NVML (`pynvml` from nvidia-ml-py).

What is read when:
- `open()`: nvmlInit, then once per source the driver, CUDA driver and NVML
  versions, and once per device its static facts (name, UUID, PCI bus id,
  memory total, compute capability, architecture, power management limit and
  its default/min/max, max SM/memory clocks, max PCIe generation and width,
  BAR1 size, ECC mode, MIG mode) and, in MIG mode, its MIG devices (mig.py).
- `poll()`: per device utilization, memory (v2 struct where the driver has it,
  so `reserved` is apart from `used`; else v1), temperature, fan, power and
  enforced limit, SM/memory clocks, P-state, encoder/decoder utilization,
  clock event (throttle) reasons, volatile uncorrected ECC errors, BAR1 used,
  the energy counter, each MIG device's memory, and the compute/graphics/MPS
  process lists (with their MIG GPU/compute instance ids) and per-process
  SM/memory utilization, and the NVML events pending (events.py: a zero-timeout
  drain). The first poll takes the memory and BAR1 that `open()` has just read.
- Every `slow_interval_s` (30 s; and at the first poll): persistence mode,
  display active and compute mode. They change only when an administrator
  runs `nvidia-smi -pm`/`-c` or a display server starts on the GPU, so a
  change shows within 30 s; asking each poll was 3 calls per GPU per second.
- With PCIe throughput, every `pcie_interval_s` (2 s) off the poll path
  (`PcieSampler`, pcie.py): rx/tx and the current link generation and
  width. The link retrains down at idle and up under load, so it is read as
  often as the throughput shown beside it, not once.

`detail="table"` (the text table of `gputui snapshot`) reads only what that
table prints: per device name, MIG mode, memory, utilization, temperature,
fan, power and its limits, P-state, throttle reasons and the process lists
(no per-process utilization, no PCIe, no other facts). The records are
the same; what is not read stays None (N/A), and `--json` and the dashboard
use the default `detail="full"`.

Errors follow one policy, in `DeviceQuery` (query.py): unsupported
fields are None and never asked again, NoPermission is None for that poll, and
a device that fails hard (GPU lost) is marked failed with a reason while the
others keep updating. A failed device is not polled again (a lost GPU needs a
reset, after which gputui must be restarted). Init failures raise
SourceUnavailable with one human sentence.

MIG: the MIG devices are enumerated once, at open (reconfiguring MIG needs the
GPUs idle; restart gputui after it); each has its own `DeviceQuery`, so a
query NVML does not support on MIG handles (utilization) is asked once.
Processes are listed against the parent GPU with the GPU instance they run in.

The calls themselves are calls.py's; turning their answers into DeviceInfo and
DeviceSample is reading.py's; this module opens NVML and runs the polls.

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
from gputui.model.mig import with_mig_indexes
from gputui.model.record import replace
from gputui.model.snapshot import (
    GPM_FIELDS,
    DeviceInfo,
    DeviceSnapshot,
    GpuProcess,
    MigDevice,
    Snapshot,
)
from gputui.sources.base import Source
from gputui.sources.errors import SourceUnavailable
from gputui.sources.nvml.calls import CUDA_VERSION, DRIVER_VERSION, NVML_VERSION
from gputui.sources.nvml.events import EventReader
from gputui.sources.nvml.gpm_values import gpm_again, with_gpm
from gputui.sources.nvml.procs import ProcessReader
from gputui.sources.nvml.query import DeviceFailed, DeviceQuery, human_reason
from gputui.sources.nvml.reading import (
    NO_LINK,
    arch_names,
    cuda_version_text,
    read_info,
    read_sample,
    read_slow,
    read_table_sample,
    text,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:  # typing only: a Protocol class costs import time on the `snapshot` path
    from collections.abc import Mapping, Sequence
    from typing import Any, Protocol

    from gputui.model.snapshot import HostSnapshot
    from gputui.sources.nvml.gpm import GpmReader
    from gputui.sources.nvml.mig import MigReader
    from gputui.sources.nvml.pcie import PcieSampler
    from gputui.sources.nvml.query import Call
    from gputui.sources.nvml.reading import Detail

    class HostSampler(Protocol):
        """What NvmlSource needs of sources/host/source.py's HostSampler (imported only when used)."""

        def sample(self) -> HostSnapshot: ...

        def enrich(self, processes: Sequence[GpuProcess]) -> tuple[GpuProcess, ...]: ...

        def notices(self) -> tuple[str, ...]: ...


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


# Queries that fill several fields at once.
_KEY_FIELDS: dict[str, tuple[str, ...]] = {
    "memory": ("memory_used", "memory_free", "memory_total", "memory_reserved"),
    "utilization": ("utilization_gpu", "utilization_memory"),
    "bar1": ("bar1_total", "bar1_used"),
    "power_constraints": ("power_min_limit_w", "power_max_limit_w"),
    "gpm": GPM_FIELDS,
}


class _Device:
    """One GPU's NVML state: its query helper, static info, slow facts and process reader."""

    __slots__ = (
        "index",
        "query",
        "info",
        "failed",
        "procs",
        "mig",
        "slow",
        "gpm",
        "_unsupported",
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
        self.gpm: GpmReader | None = None
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


_NO_PCIE: tuple[None, None] = (None, None)

SLOW_INTERVAL_S = 30.0  # persistence, display active, compute mode: see the module docstring


class NvmlSource(Source):
    """Telemetry from the NVIDIA driver. Build with `NvmlSource.open()`; see the module docstring."""

    name = "nvml"

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> NvmlSource:
        """`--source nvml` (sources/registry.py): no options of its own."""
        return cls.open(
            with_host=bool(options.get("with_host", True)), detail=options.get("detail", "full")
        )

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
        events: EventReader | None = None,
    ) -> None:
        self._devices = devices
        self._events = events
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
                _optional_text(system, "driver_version", DRIVER_VERSION),
                _optional_cuda(system),
                _optional_text(system, "nvml_version", NVML_VERSION),
            )
            archs = arch_names() if detail == "full" else {}
            devices = [_open_device(i, archs, detail, clock) for i in range(count)]
            host = _open_host_sampler() if with_host else None
            handles = [(d.index, d.query.handle) for d in devices if d.failed is None]
            events = EventReader.open(handles) if detail == "full" else None
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
            events=events,
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
                            sample = read_table_sample(d.query)
                        else:
                            if slow_due:
                                d.slow = read_slow(d.query)
                            sample = read_sample(
                                d.query,
                                pcie_values.get(d.index, _NO_PCIE),
                                links.get(d.index, NO_LINK),
                                d.slow,
                            )
                        processes.extend(d.procs.read(d.query, d.index, utilization=full))
                        if d.mig is not None:
                            migs = d.mig.read()
                        if d.gpm is not None:
                            sample, migs = with_gpm(d.gpm.read(), sample, migs)
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
            now = time.time()
            events = self._events.drain(now) if self._events is not None else ()
            notices = self._notices()
            host = None
            procs = with_mig_indexes(snaps, processes)
            if self._host is not None:
                host = self._host.sample()
                procs = self._host.enrich(procs)
                notices = notices + tuple(self._host.notices())
            return Snapshot(
                timestamp=now,
                source="nvml",
                devices=tuple(snaps),
                processes=procs,
                host=host,
                driver_version=self._driver_version,
                cuda_driver_version=self._cuda_version,
                nvml_version=self._nvml_version,
                notices=notices,
                events=events,
            )

    def host_again(self, snapshot: Snapshot) -> Snapshot:
        """`snapshot` with the host's and its processes' CPU read again, and GPM's figures
        where the poll was too soon for them (the rest as polled).

        A one-shot command polls once, right after opening: the CPU counters then cover no
        time at all, so CPU reads unknown. `gputui snapshot` waits a short window and
        calls this, which reads the host side alone, without a second NVML poll."""
        host = self._host
        with self._lock:
            if self.gpm_pending:
                snapshot = gpm_again(snapshot, self._devices)
            if host is None:
                return snapshot
            return replace(snapshot, host=host.sample(), processes=host.enrich(snapshot.processes))

    @property
    def gpm_pending(self) -> bool:
        """A GPU with GPM was polled too soon after open to have its figures yet."""
        return any(d.gpm is not None and d.gpm.pending for d in self._devices)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._pcie is not None:
                self._pcie.join(timeout=2.0)
                self._pcie.close()
            for d in self._devices:
                if d.gpm is not None:
                    d.gpm.close()
            if self._events is not None:
                self._events.close()
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


def _open_device(
    index: int,
    archs: dict[int, str],
    detail: Detail = "full",
    clock: Callable[[], float] = time.monotonic,
) -> _Device:
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    except pynvml.NVMLError as exc:
        d = _Device(index, None, DeviceInfo(index=index, name="Unknown GPU"))
        d.failed = f"cannot open this GPU: {human_reason(exc)}"
        return d
    q = DeviceQuery(handle)
    partial: list[Any] = []
    try:
        info = read_info(index, q, archs, partial, detail)
        mig = None
        if info.mig_mode:
            from gputui.sources.nvml.mig import MigReader, open_mig_devices

            mig = MigReader(open_mig_devices(q))
        gpm = _gpm_reader(q, mig, clock)
    except DeviceFailed as exc:
        fields = dict(partial)
        fields.setdefault("name", "Unknown GPU")
        d = _Device(index, q, DeviceInfo(index=index, **fields))
        d.failed = exc.reason
        return d
    device = _Device(index, q, info, mig)
    device.gpm = gpm
    return device


def _gpm_reader(
    q: DeviceQuery, mig: MigReader | None, clock: Callable[[], float] = time.monotonic
) -> GpmReader | None:
    """A GPM reader where the GPU has GPM (gpm.py is imported only then); else None, and
    "gpm" joins the device's unsupported keys."""
    from gputui.sources.nvml.gpm import GpmReader, device_supports_gpm

    if not device_supports_gpm(q.handle):
        q.unsupported.add("gpm")
        return None
    instances: tuple[int, ...] = ()
    if mig is not None:
        instances = tuple(
            m.static.gpu_instance_id for m in mig.devices if m.static.gpu_instance_id is not None
        )
    reader = GpmReader(q.handle, instances, clock)
    if not reader.active:
        q.unsupported.add("gpm")
        return None
    return reader


def _pcie_sampler(interval_s: float, clock: Callable[[], float]) -> PcieSampler:
    """pcie.py is imported only where PCIe is read (not for the snapshot's table)."""
    from gputui.sources.nvml.pcie import PcieSampler

    return PcieSampler(interval_s, clock)


def _optional_text(system: DeviceQuery, key: str, calls: tuple[Call, ...]) -> str | None:
    try:
        value = system.get(key, calls)
    except DeviceFailed:
        return None
    return None if value is None else text(value)


def _optional_cuda(system: DeviceQuery) -> str | None:
    try:
        value = system.get("cuda_driver_version", CUDA_VERSION)
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
