"""A fake NVML at the pynvml module boundary: a table of GPUs, pynvml's own structs, real error codes.

`fake_nvml` replaces the `pynvml` functions NvmlSource calls with fakes that
read a mutable table (`FakeGpu` per device), count every call per (function,
GPU index), and raise `pynvml.NVMLError(code)` exactly as the binding does. A
function name put in `missing` raises FunctionNotFound, like a driver that
lacks the symbol. pynvml's real library is never loaded: any call the fake does
not cover raises Uninitialized, which the source treats as a hard failure, so a
forgotten fake shows up as a failed device in the tests.
"""

from __future__ import annotations

import ctypes
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pynvml
import pytest

MiB = 1024 * 1024
GiB = 1024 * MiB


@dataclass
class FakeGpu:
    index: int
    name: str = "NVIDIA GeForce RTX 3090"
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    pci_bus_id: str = "00000000:01:00.0"
    memory_total: int = 24 * GiB
    memory_used: int = 10 * GiB
    memory_reserved: int = 300 * MiB
    cc: tuple[int, int] = (8, 6)
    arch: int = pynvml.NVML_DEVICE_ARCH_AMPERE
    power_management_limit_mw: int = 350_000
    enforced_limit_mw: int = 340_000
    max_clocks: dict[int, int] = field(
        default_factory=lambda: {pynvml.NVML_CLOCK_SM: 2100, pynvml.NVML_CLOCK_MEM: 9751}
    )
    mig: int = pynvml.NVML_DEVICE_MIG_DISABLE
    util_gpu: int = 71
    util_mem: int = 33
    temperature: int = 64
    fan: int = 55
    power_mw: int = 251_500
    clocks: dict[int, int] = field(
        default_factory=lambda: {pynvml.NVML_CLOCK_SM: 1800, pynvml.NVML_CLOCK_MEM: 9501}
    )
    pstate: int = 2
    pcie_rx: int = 123_456
    pcie_tx: int = 7_890
    encoder: int = 12
    decoder: int = 3
    reasons: int = 0x4 | 0x20  # sw_power_cap + sw_thermal
    ecc_uncorrected: int = 5
    compute: list[tuple[int, int]] = field(default_factory=list)  # (pid, bytes)
    graphics: list[tuple[int, int]] = field(default_factory=list)
    mps: list[tuple[int, int]] = field(default_factory=list)
    # (pid, timeStamp us, smUtil, memUtil) returned by GetProcessUtilization when newer than asked
    util_samples: list[tuple[int, int, int, int]] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)  # function name -> NVML error code
    lost: bool = False  # every query raises GPU_IS_LOST
    handle_error: int | None = None  # nvmlDeviceGetHandleByIndex raises this
    # device facts
    default_limit_mw: int = 350_000
    limit_constraints_mw: tuple[int, int] = (100_000, 400_000)
    pcie_max_gen: int = 4
    pcie_max_width: int = 16
    pcie_gen: int = 3
    pcie_width: int = 16
    bar1_total: int = 256 * MiB
    bar1_used: int = 5 * MiB
    ecc_mode: int = pynvml.NVML_FEATURE_ENABLED
    temp_slowdown: int = 90  # GetTemperatureThreshold(SLOWDOWN), Celsius
    persistence: int = pynvml.NVML_FEATURE_ENABLED
    display_active: int = pynvml.NVML_FEATURE_DISABLED
    compute_mode: int = pynvml.NVML_COMPUTEMODE_EXCLUSIVE_PROCESS
    energy_mj: int = 123_456_789
    # MIG: the devices, and (GI, CI) ids of processes by pid on the parent's lists
    migs: list[FakeMig] = field(default_factory=list)
    max_mig: int = 7
    instances: dict[int, tuple[int, int]] = field(default_factory=dict)
    # GPM: whether the GPU has it, and each metric's mean by NVML metric id (per GPU instance
    # id in gpm_instances); a metric not listed answers NOT_SUPPORTED in nvmlGpmMetricsGet
    gpm: bool = False
    gpm_values: dict[int, float] = field(default_factory=dict)
    gpm_instances: dict[int, dict[int, float]] = field(default_factory=dict)


@dataclass
class FakeMig:
    """A MIG device handle: its own memory and BAR1; utilization NotSupported, as on real NVML."""

    parent: FakeGpu | None
    index: int
    gpu_instance: int
    compute_instance: int = 0
    name: str = "NVIDIA A100-SXM4-80GB MIG 3g.40gb"
    uuid: str = "MIG-11111111-2222-3333-4444-555555555555"
    memory_total: int = 40192 * MiB
    memory_used: int = 20 * GiB
    bar1_total: int = 2 * GiB
    bar1_used: int = 4 * MiB
    errors: dict[str, int] = field(
        default_factory=lambda: {"nvmlDeviceGetUtilizationRates": pynvml.NVML_ERROR_NOT_SUPPORTED}
    )


class FakeNvml:
    def __init__(self, gpus: list[FakeGpu]) -> None:
        self.gpus = gpus
        self.calls: Counter[tuple[str, int | None]] = Counter()
        self.missing: set[str] = set()
        self.init_error: int | None = None
        self.count_error: int | None = None
        self.driver_version = "550.54.15"
        self.cuda_version = 12040
        self.nvml_version = "12.550.54.15"
        self.initialized = 0
        self.shutdowns = 0
        self.util_asked: list[tuple[int, int]] = []  # (gpu index, lastSeenTimeStamp asked with)
        self.lookups: Counter[str] = Counter()  # C symbols asked of _nvmlGetFunctionPointer
        self.pcie_hook: Any = None  # called as hook(gpu, counter) before a PCIe answer
        self.gpm_samples: dict[int, dict[int, float]] = {}  # sample address -> its values
        self._gpm_buffers: list[Any] = []

    def n(self, fn: str, index: int | None = None) -> int:
        """How many times `fn` was called (for one GPU, or in total)."""
        if index is not None:
            return self.calls[(fn, index)]
        return sum(v for (name, _), v in self.calls.items() if name == fn)

    # -- plumbing ------------------------------------------------------------
    def _enter(self, fn: str, gpu: FakeGpu | FakeMig | None) -> None:
        if isinstance(gpu, FakeMig):
            assert gpu.parent is not None
            self.calls[(fn, ("mig", gpu.parent.index, gpu.index))] += 1  # type: ignore[index]
            if fn in self.missing:
                raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)
            if gpu.parent.lost:
                raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)
            if fn in gpu.errors:
                raise pynvml.NVMLError(gpu.errors[fn])
            return
        self.calls[(fn, None if gpu is None else gpu.index)] += 1
        if fn in self.missing:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)
        if gpu is not None:
            if gpu.lost:
                raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)
            if fn in gpu.errors:
                raise pynvml.NVMLError(gpu.errors[fn])

    def install(self, mp: pytest.MonkeyPatch) -> None:
        for name in dir(self):
            if name.startswith("nvml") and callable(getattr(self, name)):
                # raising=False: older nvidia-ml-py lacks newer entry points (e.g.
                # nvmlDeviceGetTemperatureV); the fake library still offers them.
                mp.setattr(pynvml, name, getattr(self, name), raising=False)
        mp.setattr(pynvml, "_nvmlGetFunctionPointer", self._function_pointer)

    # -- system --------------------------------------------------------------
    def nvmlInit(self) -> None:
        self._enter("nvmlInit", None)
        if self.init_error is not None:
            raise pynvml.NVMLError(self.init_error)
        self.initialized += 1

    def nvmlShutdown(self) -> None:
        self._enter("nvmlShutdown", None)
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:
        self._enter("nvmlDeviceGetCount", None)
        if self.count_error is not None:
            raise pynvml.NVMLError(self.count_error)
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:
        gpu = self.gpus[index]
        self._enter("nvmlDeviceGetHandleByIndex", None)
        if gpu.handle_error is not None:
            raise pynvml.NVMLError(gpu.handle_error)
        return gpu

    def nvmlSystemGetDriverVersion(self) -> str:
        self._enter("nvmlSystemGetDriverVersion", None)
        return self.driver_version

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._enter("nvmlSystemGetCudaDriverVersion", None)
        return self.cuda_version

    def nvmlSystemGetNVMLVersion(self) -> str:
        self._enter("nvmlSystemGetNVMLVersion", None)
        return self.nvml_version

    # -- static --------------------------------------------------------------
    def nvmlDeviceGetName(self, g: FakeGpu | FakeMig) -> str:
        self._enter("nvmlDeviceGetName", g)
        return g.name

    def nvmlDeviceGetUUID(self, g: FakeGpu | FakeMig) -> str:
        self._enter("nvmlDeviceGetUUID", g)
        return g.uuid

    def nvmlDeviceGetPciInfo(self, g: FakeGpu) -> Any:
        self._enter("nvmlDeviceGetPciInfo", g)
        info = pynvml.nvmlPciInfo_t()
        info.busId = g.pci_bus_id.encode()
        info.busIdLegacy = g.pci_bus_id[4:].encode()
        return info

    def nvmlDeviceGetCudaComputeCapability(self, g: FakeGpu) -> tuple[int, int]:
        self._enter("nvmlDeviceGetCudaComputeCapability", g)
        return g.cc

    def nvmlDeviceGetArchitecture(self, g: FakeGpu) -> int:
        self._enter("nvmlDeviceGetArchitecture", g)
        return g.arch

    def nvmlDeviceGetPowerManagementLimit(self, g: FakeGpu) -> int:
        self._enter("nvmlDeviceGetPowerManagementLimit", g)
        return g.power_management_limit_mw

    def nvmlDeviceGetMaxClockInfo(self, g: FakeGpu, kind: int) -> int:
        self._enter("nvmlDeviceGetMaxClockInfo", g)
        return g.max_clocks[kind]

    def nvmlDeviceGetMigMode(self, g: FakeGpu) -> list[int]:
        self._enter("nvmlDeviceGetMigMode", g)
        return [g.mig, g.mig]

    # -- per poll ------------------------------------------------------------
    def nvmlDeviceGetMemoryInfo(self, g: FakeGpu | FakeMig, version: int | None = None) -> Any:
        if isinstance(g, FakeMig):
            self._enter("nvmlDeviceGetMemoryInfo", g)
            mm = pynvml.c_nvmlMemory_t()
            mm.total, mm.used, mm.free = (
                g.memory_total,
                g.memory_used,
                g.memory_total - g.memory_used,
            )
            return mm
        if version:
            self._enter("nvmlDeviceGetMemoryInfo_v2", g)
            assert version == pynvml.nvmlMemory_v2
            m2 = pynvml.c_nvmlMemory_v2_t()
            m2.version = version
            m2.total = g.memory_total
            m2.reserved = g.memory_reserved
            m2.used = g.memory_used
            m2.free = g.memory_total - g.memory_reserved - g.memory_used
            return m2
        self._enter("nvmlDeviceGetMemoryInfo", g)
        m = pynvml.c_nvmlMemory_t()
        m.total = g.memory_total
        m.used = g.memory_used + g.memory_reserved  # v1 counts reserved as used
        m.free = g.memory_total - m.used
        return m

    def nvmlDeviceGetUtilizationRates(self, g: FakeGpu | FakeMig) -> Any:
        if isinstance(g, FakeMig):
            self._enter("nvmlDeviceGetUtilizationRates", g)
            raise AssertionError("the fake MIG device has no utilization")
        self._enter("nvmlDeviceGetUtilizationRates", g)
        u = pynvml.c_nvmlUtilization_t()
        u.gpu, u.memory = g.util_gpu, g.util_mem
        return u

    def nvmlDeviceGetTemperatureV(self, g: FakeGpu, sensor: int) -> int:
        self._enter("nvmlDeviceGetTemperatureV", g)
        assert sensor == pynvml.NVML_TEMPERATURE_GPU
        return g.temperature

    def nvmlDeviceGetTemperature(self, g: FakeGpu, sensor: int) -> int:
        self._enter("nvmlDeviceGetTemperature", g)
        assert sensor == pynvml.NVML_TEMPERATURE_GPU
        return g.temperature

    def nvmlDeviceGetTemperatureThreshold(self, g: FakeGpu, threshold: int) -> int:
        self._enter("nvmlDeviceGetTemperatureThreshold", g)
        assert threshold == pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN
        return g.temp_slowdown

    def nvmlDeviceGetFanSpeed(self, g: FakeGpu) -> int:
        self._enter("nvmlDeviceGetFanSpeed", g)
        return g.fan

    def nvmlDeviceGetPowerUsage(self, g: FakeGpu) -> int:
        self._enter("nvmlDeviceGetPowerUsage", g)
        return g.power_mw

    def nvmlDeviceGetEnforcedPowerLimit(self, g: FakeGpu) -> int:
        self._enter("nvmlDeviceGetEnforcedPowerLimit", g)
        return g.enforced_limit_mw

    def nvmlDeviceGetClockInfo(self, g: FakeGpu, kind: int) -> int:
        self._enter("nvmlDeviceGetClockInfo", g)
        return g.clocks[kind]

    def nvmlDeviceGetPerformanceState(self, g: FakeGpu) -> int:
        self._enter("nvmlDeviceGetPerformanceState", g)
        return g.pstate

    def nvmlDeviceGetEncoderUtilization(self, g: FakeGpu) -> list[int]:
        self._enter("nvmlDeviceGetEncoderUtilization", g)
        return [g.encoder, 167000]

    def nvmlDeviceGetDecoderUtilization(self, g: FakeGpu) -> list[int]:
        self._enter("nvmlDeviceGetDecoderUtilization", g)
        return [g.decoder, 167000]

    def nvmlDeviceGetCurrentClocksEventReasons(self, g: FakeGpu) -> int:
        self._enter("nvmlDeviceGetCurrentClocksEventReasons", g)
        return g.reasons

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, g: FakeGpu) -> int:
        self._enter("nvmlDeviceGetCurrentClocksThrottleReasons", g)
        return g.reasons

    def nvmlDeviceGetTotalEccErrors(self, g: FakeGpu, error_type: int, counter: int) -> int:
        self._enter("nvmlDeviceGetTotalEccErrors", g)
        assert error_type == pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
        assert counter == pynvml.NVML_VOLATILE_ECC
        return g.ecc_uncorrected

    def nvmlDeviceGetPcieThroughput(self, g: FakeGpu, counter: int) -> int:
        self._enter("nvmlDeviceGetPcieThroughput", g)
        if self.pcie_hook is not None:
            self.pcie_hook(g, counter)
        return g.pcie_rx if counter == pynvml.NVML_PCIE_UTIL_RX_BYTES else g.pcie_tx

    def nvmlDeviceGetPowerManagementDefaultLimit(self, g: FakeGpu) -> int:
        self._enter("nvmlDeviceGetPowerManagementDefaultLimit", g)
        return g.default_limit_mw

    def nvmlDeviceGetPowerManagementLimitConstraints(self, g: FakeGpu) -> list[int]:
        self._enter("nvmlDeviceGetPowerManagementLimitConstraints", g)
        return list(g.limit_constraints_mw)

    def nvmlDeviceGetMaxPcieLinkGeneration(self, g: FakeGpu) -> int:
        self._enter("nvmlDeviceGetMaxPcieLinkGeneration", g)
        return g.pcie_max_gen

    def nvmlDeviceGetMaxPcieLinkWidth(self, g: FakeGpu) -> int:
        self._enter("nvmlDeviceGetMaxPcieLinkWidth", g)
        return g.pcie_max_width

    def nvmlDeviceGetCurrPcieLinkGeneration(self, g: FakeGpu) -> int:
        self._enter("nvmlDeviceGetCurrPcieLinkGeneration", g)
        return g.pcie_gen

    def nvmlDeviceGetCurrPcieLinkWidth(self, g: FakeGpu) -> int:
        self._enter("nvmlDeviceGetCurrPcieLinkWidth", g)
        return g.pcie_width

    def nvmlDeviceGetBAR1MemoryInfo(self, g: FakeGpu | FakeMig) -> Any:
        self._enter("nvmlDeviceGetBAR1MemoryInfo", g)
        b = pynvml.c_nvmlBAR1Memory_t()
        b.bar1Total, b.bar1Used, b.bar1Free = g.bar1_total, g.bar1_used, g.bar1_total - g.bar1_used
        return b

    def nvmlDeviceGetEccMode(self, g: FakeGpu) -> list[int]:
        self._enter("nvmlDeviceGetEccMode", g)
        return [g.ecc_mode, g.ecc_mode]

    def nvmlDeviceGetPersistenceMode(self, g: FakeGpu) -> int:
        self._enter("nvmlDeviceGetPersistenceMode", g)
        return g.persistence

    def nvmlDeviceGetDisplayActive(self, g: FakeGpu) -> int:
        self._enter("nvmlDeviceGetDisplayActive", g)
        return g.display_active

    def nvmlDeviceGetComputeMode(self, g: FakeGpu) -> int:
        self._enter("nvmlDeviceGetComputeMode", g)
        return g.compute_mode

    def nvmlDeviceGetTotalEnergyConsumption(self, g: FakeGpu) -> int:
        self._enter("nvmlDeviceGetTotalEnergyConsumption", g)
        return g.energy_mj

    # -- MIG -----------------------------------------------------------------
    def nvmlDeviceGetMaxMigDeviceCount(self, g: FakeGpu) -> int:
        self._enter("nvmlDeviceGetMaxMigDeviceCount", g)
        return g.max_mig if g.mig == pynvml.NVML_DEVICE_MIG_ENABLE else 0

    def nvmlDeviceGetMigDeviceHandleByIndex(self, g: FakeGpu, index: int) -> FakeMig:
        self._enter("nvmlDeviceGetMigDeviceHandleByIndex", g)
        if index >= 7:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        if index >= len(g.migs):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        return g.migs[index]

    def nvmlDeviceGetGpuInstanceId(self, m: FakeMig) -> int:
        self._enter("nvmlDeviceGetGpuInstanceId", m)
        return m.gpu_instance

    def nvmlDeviceGetComputeInstanceId(self, m: FakeMig) -> int:
        self._enter("nvmlDeviceGetComputeInstanceId", m)
        return m.compute_instance

    # -- GPM -----------------------------------------------------------------
    def nvmlGpmQueryDeviceSupport(self, g: FakeGpu) -> Any:
        self._enter("nvmlGpmQueryDeviceSupport", g)
        support = pynvml.c_nvmlGpmSupport_t()
        support.version = pynvml.NVML_GPM_SUPPORT_VERSION
        support.isSupportedDevice = int(g.gpm)
        return support

    def nvmlGpmSampleAlloc(self) -> Any:
        """A real sample handle (pynvml's pointer type); its values live in `gpm_samples`."""
        self._enter("nvmlGpmSampleAlloc", None)
        sample = ctypes.pointer(pynvml.struct_c_nvmlGpmSample_t())
        self._gpm_buffers.append(sample)  # keep the struct alive while the handle is
        return sample

    def nvmlGpmSampleFree(self, sample: Any) -> None:
        self._enter("nvmlGpmSampleFree", None)

    def nvmlGpmSampleGet(self, g: FakeGpu, sample: Any) -> Any:
        self._enter("nvmlGpmSampleGet", g)
        if not g.gpm:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        self.gpm_samples[ctypes.addressof(sample.contents)] = dict(g.gpm_values)
        return sample

    def nvmlGpmMigSampleGet(self, g: FakeGpu, gpu_instance: int, sample: Any) -> Any:
        self._enter("nvmlGpmMigSampleGet", g)
        if not g.gpm:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        if gpu_instance not in g.gpm_instances:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        self.gpm_samples[ctypes.addressof(sample.contents)] = dict(g.gpm_instances[gpu_instance])
        return sample

    def nvmlGpmMetricsGet(self, request: Any) -> Any:
        """The second sample's values (the fake's counters are means already)."""
        self._enter("nvmlGpmMetricsGet", None)
        values = self.gpm_samples[ctypes.addressof(request.sample2.contents)]
        for i in range(request.numMetrics):
            entry = request.metrics[i]
            if entry.metricId in values:
                entry.nvmlReturn = pynvml.NVML_SUCCESS
                entry.value = values[entry.metricId]
            else:
                entry.nvmlReturn = pynvml.NVML_ERROR_NOT_SUPPORTED
                entry.value = 0.0
        return request

    # -- processes -----------------------------------------------------------
    # sources/nvml/procs.py calls the C symbols of the process lists and of the
    # per-process utilization itself (one call with a buffer, not pynvml's two), so the
    # fake offers them as C functions, through pynvml._nvmlGetFunctionPointer.
    _LISTS = {
        "nvmlDeviceGetComputeRunningProcesses": "compute",
        "nvmlDeviceGetGraphicsRunningProcesses": "graphics",
        "nvmlDeviceGetMPSComputeRunningProcesses": "mps",
    }

    def _function_pointer(self, symbol: str) -> Any:
        """The C entry points NvmlSource reaches without a pynvml wrapper."""
        self.lookups[symbol] += 1
        base, _, version = symbol.partition("_v")
        if symbol != "nvmlDeviceGetProcessUtilization" and (
            base not in self._LISTS or version not in ("", "2", "3")
        ):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_UNINITIALIZED)
        if symbol in self.missing:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)
        if symbol == "nvmlDeviceGetProcessUtilization":
            return self._c_process_utilization
        attr, record_size = self._LISTS[base], 16 if version == "" else 24

        def c_function(g: FakeGpu, count_ref: Any, records: Any) -> int:
            """Behaves like the C symbol: fills v1 (16-byte) or v2 (24-byte) records."""
            code = self._c_enter(symbol, g)
            if code:
                return code
            entries: list[tuple[int, int]] = getattr(g, attr)
            count = count_ref._obj
            if records is None or count.value < len(entries):
                count.value = len(entries)
                return pynvml.NVML_ERROR_INSUFFICIENT_SIZE if entries else pynvml.NVML_SUCCESS
            assert ctypes.sizeof(records._type_) == record_size, (
                f"{symbol} has {record_size}-byte records"
            )
            for i, (pid, mem) in enumerate(entries):
                records[i].pid = pid
                records[i].usedGpuMemory = mem
                if record_size == 24:
                    gi, ci = g.instances.get(pid, (0xFFFFFFFF, 0xFFFFFFFF))
                    records[i].gpuInstanceId, records[i].computeInstanceId = gi, ci
            count.value = len(entries)
            return pynvml.NVML_SUCCESS

        return c_function

    def _c_enter(self, symbol: str, g: FakeGpu) -> int:
        """What `_enter` raises, as the NVML return code a C function gives instead (0: none)."""
        self.calls[(symbol, g.index)] += 1
        if g.lost:
            return pynvml.NVML_ERROR_GPU_IS_LOST
        return g.errors.get(symbol, pynvml.NVML_SUCCESS)

    def _c_process_utilization(self, g: FakeGpu, samples: Any, count_ref: Any, since: Any) -> int:
        """nvmlDeviceGetProcessUtilization: samples newer than `since`, NOT_FOUND if none."""
        code = self._c_enter("nvmlDeviceGetProcessUtilization", g)
        self.util_asked.append((g.index, since.value))
        if code:
            return code
        newer = [s for s in g.util_samples if s[1] > since.value]
        if not newer:
            return pynvml.NVML_ERROR_NOT_FOUND
        count = count_ref._obj
        if samples is None or count.value < len(newer):
            count.value = len(newer)
            return pynvml.NVML_ERROR_INSUFFICIENT_SIZE
        for i, (pid, ts, sm, mem) in enumerate(newer):
            samples[i].pid, samples[i].timeStamp = pid, ts
            samples[i].smUtil, samples[i].memUtil = sm, mem
        count.value = len(newer)
        return pynvml.NVML_SUCCESS


def two_gpus() -> list[FakeGpu]:
    """A workstation: an RTX 3090 with a desktop and a training job, an A100 with one job."""
    g0 = FakeGpu(
        index=0,
        compute=[(1001, 8 * GiB), (1003, 96 * MiB)],
        graphics=[(1002, 312 * MiB), (1003, 96 * MiB)],
        util_samples=[(1001, 5_000_000, 60, 20), (1003, 5_000_000, 2, 1)],
    )
    g1 = FakeGpu(
        index=1,
        name="NVIDIA A100-SXM4-80GB",
        uuid="GPU-a1b2c3d4-e5f6-4789-8abc-def012345678",
        pci_bus_id="00000000:41:00.0",
        memory_total=80 * GiB,
        memory_used=62 * GiB,
        memory_reserved=512 * MiB,
        cc=(8, 0),
        power_management_limit_mw=400_000,
        enforced_limit_mw=400_000,
        max_clocks={pynvml.NVML_CLOCK_SM: 1410, pynvml.NVML_CLOCK_MEM: 1593},
        util_gpu=98,
        util_mem=80,
        temperature=58,
        power_mw=385_250,
        clocks={pynvml.NVML_CLOCK_SM: 1410, pynvml.NVML_CLOCK_MEM: 1593},
        pstate=0,
        reasons=0,
        ecc_uncorrected=0,
        compute=[(2001, 30 * GiB)],
        util_samples=[(2001, 6_000_000, 91, 55)],
    )
    return [g0, g1]


@pytest.fixture
def fake_nvml(monkeypatch: pytest.MonkeyPatch) -> FakeNvml:
    fake = FakeNvml(two_gpus())
    fake.install(monkeypatch)
    return fake


@pytest.fixture
def make_gpu() -> type[FakeGpu]:
    return FakeGpu
