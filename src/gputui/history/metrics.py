"""Rolling per-device history of the metrics the dashboard and the history view draw.

N/A samples are not drawn: a sparkline of a GPU that cannot report power stays
empty instead of drawing a fake 0 W line, and callers get plain floats they
can hand to a sparkline widget. The price is that series of different metrics
may have different lengths; each is still in time order.

Memory is bounded twice over: at most `maxlen` points per device (one shared
timestamp and one value per metric each, N/A stored as NaN), and with
`min_spacing_s` a poll that comes sooner than that after the last stored point
replaces it instead of adding one. Points are C doubles in `array('d')`, 8 bytes
each, where a deque of floats costs 32 (a pointer and a 24-byte float object):
the dashboard's 900 points at 1 s spacing (15 minutes at any interval) are
0.4 MB for 8 GPUs instead of 1.6 MB. Dropping the oldest point moves the other
899 (7 KB, well under a microsecond); reading a series makes its floats in C
(`tolist`) and filters only when a NaN is there. A device that leaves the
snapshot (or comes back as a different GPU) loses its history.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from collections.abc import Callable

from gputui.model.snapshot import DeviceSample, Snapshot

# Drawn as sparklines in the GPU panels.
METRICS = ("utilization", "memory", "power", "temperature")
# Also kept, for the history view.
EXTRA_METRICS = ("pcie_rx", "pcie_tx", "sm_active")
ALL_METRICS = METRICS + EXTRA_METRICS

_NA = math.nan


def _memory_pct(s: DeviceSample) -> float | None:
    if s.memory_used is None or not s.memory_total:
        return None
    return 100.0 * s.memory_used / s.memory_total


_EXTRACT: dict[str, Callable[[DeviceSample], float | int | None]] = {
    "utilization": lambda s: s.utilization_gpu,
    "memory": _memory_pct,
    "power": lambda s: s.power_w,
    "temperature": lambda s: s.temperature_c,
    "pcie_rx": lambda s: s.pcie_rx_kbs,
    "pcie_tx": lambda s: s.pcie_tx_kbs,
    "sm_active": lambda s: s.sm_active_pct,  # GPM: an empty series on a GPU without it
}


class _DeviceHistory:
    __slots__ = ("identity", "maxlen", "series", "times")

    def __init__(self, identity: str | None, maxlen: int) -> None:
        self.identity = identity
        self.maxlen = maxlen
        self.times = array("d")
        self.series: dict[str, array[float]] = {m: array("d") for m in ALL_METRICS}

    def append(self, now: float, values: dict[str, float]) -> None:
        full = len(self.times) >= self.maxlen
        self.times.append(now)
        if full:
            del self.times[0]
        for metric, value in values.items():
            column = self.series[metric]
            column.append(value)
            if full:
                del column[0]

    def replace_last(self, values: dict[str, float]) -> None:
        for metric, value in values.items():
            self.series[metric][-1] = value


def _values(sample: DeviceSample) -> dict[str, float]:
    out: dict[str, float] = {}
    for metric, extract in _EXTRACT.items():
        value = extract(sample)
        out[metric] = _NA if value is None else float(value)
    return out


def _known(values: array[float]) -> list[float]:
    out = values.tolist()
    total = sum(out)  # NaN when any point is N/A (the only NaNs stored), else a number
    return out if total == total else [v for v in out if v == v]  # NaN != NaN


class History:
    """Last `maxlen` points per device and metric, fed one snapshot at a time."""

    def __init__(self, maxlen: int = 300, *, min_spacing_s: float = 0.0) -> None:
        if maxlen < 1:
            raise ValueError("maxlen must be at least 1")
        if min_spacing_s < 0:
            raise ValueError("min_spacing_s must not be negative")
        self.maxlen = maxlen
        self.min_spacing_s = min_spacing_s
        self._devices: dict[int, _DeviceHistory] = {}

    def add(self, snapshot: Snapshot) -> None:
        present: set[int] = set()
        now = snapshot.timestamp
        for dev in snapshot.devices:
            index = dev.info.index
            present.add(index)
            identity = dev.info.uuid or dev.info.pci_bus_id or dev.info.name
            hist = self._devices.get(index)
            if hist is None or hist.identity != identity:
                hist = self._devices[index] = _DeviceHistory(identity, self.maxlen)
            if dev.sample is None:
                continue  # failed device: keep what we had, add nothing
            values = _values(dev.sample)
            if all(v != v for v in values.values()):
                continue  # nothing readable: no point in time
            replace = (
                self.min_spacing_s > 0
                and bool(hist.times)
                and now - hist.times[-1] < self.min_spacing_s
            )
            if replace:
                hist.replace_last(values)
            else:
                hist.append(now, values)
        for gone in set(self._devices) - present:
            del self._devices[gone]

    @staticmethod
    def _check(metric: str) -> None:
        if metric not in _EXTRACT:
            raise ValueError(f"unknown metric {metric!r}; expected one of {', '.join(ALL_METRICS)}")

    def series(self, device_index: int, metric: str) -> list[float]:
        """Oldest first, N/A left out; empty for an unknown device. Unknown metric: ValueError."""
        self._check(metric)
        hist = self._devices.get(device_index)
        return _known(hist.series[metric]) if hist else []

    def last(self, device_index: int, metric: str, count: int) -> list[float]:
        """`series(...)[-count:]` without copying the rest: what a sparkline `count` wide
        draws (the dashboard's panels, every poll). Only when N/A points are among the
        newest `count` does it read further back."""
        self._check(metric)
        hist = self._devices.get(device_index)
        if hist is None or count < 1:
            return []
        column = hist.series[metric]
        tail = _known(column[-count:])
        if len(tail) < count < len(column):
            return _known(column)[-count:]
        return tail

    def window(self, device_index: int, metric: str, seconds: float) -> list[float]:
        """The values of the last `seconds` (counted back from the newest point), N/A left out."""
        self._check(metric)
        hist = self._devices.get(device_index)
        if hist is None or not hist.times:
            return []
        start = bisect_left(hist.times, hist.times[-1] - seconds)
        return _known(hist.series[metric][start:])

    def span_s(self, device_index: int) -> float:
        """Seconds between the oldest and the newest point kept for this device."""
        hist = self._devices.get(device_index)
        return hist.times[-1] - hist.times[0] if hist and hist.times else 0.0

    def devices(self) -> list[int]:
        return sorted(self._devices)

    def clear(self) -> None:
        self._devices.clear()
