"""The energy counter dcgm-exporter exports, read from NVML next to the source's poll.

The snapshot (telemetry/snapshot.py) has no energy field, and the NVML source
belongs to the dashboard; rather than widen both for one exporter metric, the
exporter reads `nvmlDeviceGetTotalEnergyConsumption` itself, after the
source's poll and on the same thread, with the source's error policy:
NOT_SUPPORTED means absent for good, any other error absent for this poll.
Only used with the NVML source (NVML is then initialised); the simulated
source has no energy counter, so the metric is absent there.
"""

from __future__ import annotations

from typing import Any

from gputui.telemetry.snapshot import Snapshot


class EnergyReader:
    def __init__(self) -> None:
        import pynvml

        self._nvml: Any = pynvml
        self._unsupported: set[str] = set()

    def read(self, snapshot: Snapshot) -> dict[int, int]:
        """mJ since the driver loaded, per GPU index, for the devices that answer."""
        nvml = self._nvml
        out: dict[int, int] = {}
        for dev in snapshot.devices:
            key = dev.info.uuid or str(dev.index)
            if dev.sample is None or dev.failed is not None or key in self._unsupported:
                continue
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(dev.index)
                out[dev.index] = int(nvml.nvmlDeviceGetTotalEnergyConsumption(handle))
            except nvml.NVMLError as exc:
                if getattr(exc, "value", None) in (
                    nvml.NVML_ERROR_NOT_SUPPORTED,
                    getattr(nvml, "NVML_ERROR_FUNCTION_NOT_FOUND", -1),
                ):
                    self._unsupported.add(key)
        return out
