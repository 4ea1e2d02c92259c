"""The NVML calls the source makes, each a tuple of variants, newest first.

`DeviceQuery.get(key, CALLS)` (query.py) tries each variant once and keeps the
first the driver has (an old driver lacks the _v2/V entry points). Every call
takes the device handle first (the system-wide ones ignore it) and looks its
pynvml function up when called, so tests can stand in for pynvml's.
"""

from __future__ import annotations

import pynvml

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    from typing import Any

    from gputui.sources.nvml.query import Call

TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU
CLOCK_SM = pynvml.NVML_CLOCK_SM
CLOCK_MEM = pynvml.NVML_CLOCK_MEM


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
    return pynvml.nvmlDeviceGetTemperatureV(h, TEMPERATURE_GPU)


def _temperature(h: Any) -> Any:
    return pynvml.nvmlDeviceGetTemperature(h, TEMPERATURE_GPU)


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


def _temp_slowdown(h: Any) -> Any:
    return pynvml.nvmlDeviceGetTemperatureThreshold(h, pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)


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
MEMORY_V1: tuple[Call, ...] = (_memory_v1,)  # what a MIG device is asked
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
TEMP_SLOWDOWN: tuple[Call, ...] = (_temp_slowdown,)
PERSISTENCE: tuple[Call, ...] = (_persistence,)
DISPLAY_ACTIVE: tuple[Call, ...] = (_display_active,)
COMPUTE_MODE: tuple[Call, ...] = (_compute_mode,)
ENERGY: tuple[Call, ...] = (_energy,)
DRIVER_VERSION: tuple[Call, ...] = (_driver_version,)
CUDA_VERSION: tuple[Call, ...] = (_cuda_version,)
NVML_VERSION: tuple[Call, ...] = (_nvml_version,)
