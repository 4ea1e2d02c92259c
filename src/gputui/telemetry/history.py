"""Rolling per-device history of the few metrics the dashboard draws as sparklines.

N/A samples are skipped, not stored: a sparkline of a GPU that cannot report
power stays empty instead of drawing a fake 0 W line, and callers get plain
floats they can hand to a sparkline widget. The price is that series of
different metrics may have different lengths; each is still in time order.
Memory is bounded by `maxlen` samples per metric per device; a device that
leaves the snapshot (or comes back as a different GPU) loses its history.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from gputui.telemetry.snapshot import DeviceSample, Snapshot

METRICS = ("utilization", "memory", "power", "temperature")


def _memory_pct(s: DeviceSample) -> float | None:
    if s.memory_used is None or not s.memory_total:
        return None
    return 100.0 * s.memory_used / s.memory_total


_EXTRACT: dict[str, Callable[[DeviceSample], float | int | None]] = {
    "utilization": lambda s: s.utilization_gpu,
    "memory": _memory_pct,
    "power": lambda s: s.power_w,
    "temperature": lambda s: s.temperature_c,
}


class _DeviceHistory:
    __slots__ = ("identity", "series")

    def __init__(self, identity: str | None, maxlen: int) -> None:
        self.identity = identity
        self.series: dict[str, deque[float]] = {m: deque(maxlen=maxlen) for m in METRICS}


class History:
    """Last `maxlen` values per device and metric, fed one snapshot at a time."""

    def __init__(self, maxlen: int = 300) -> None:
        if maxlen < 1:
            raise ValueError("maxlen must be at least 1")
        self.maxlen = maxlen
        self._devices: dict[int, _DeviceHistory] = {}

    def add(self, snapshot: Snapshot) -> None:
        present: set[int] = set()
        for dev in snapshot.devices:
            index = dev.info.index
            present.add(index)
            identity = dev.info.uuid or dev.info.pci_bus_id or dev.info.name
            hist = self._devices.get(index)
            if hist is None or hist.identity != identity:
                hist = self._devices[index] = _DeviceHistory(identity, self.maxlen)
            if dev.sample is None:
                continue  # failed device: keep what we had, add nothing
            for metric, extract in _EXTRACT.items():
                value = extract(dev.sample)
                if value is not None:
                    hist.series[metric].append(float(value))
        for gone in set(self._devices) - present:
            del self._devices[gone]

    def series(self, device_index: int, metric: str) -> list[float]:
        """Oldest first; empty for an unknown device. Unknown metric names are a bug: ValueError."""
        if metric not in _EXTRACT:
            raise ValueError(f"unknown metric {metric!r}; expected one of {', '.join(METRICS)}")
        hist = self._devices.get(device_index)
        return list(hist.series[metric]) if hist else []

    def devices(self) -> list[int]:
        return sorted(self._devices)

    def clear(self) -> None:
        self._devices.clear()
