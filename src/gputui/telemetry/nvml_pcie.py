"""PCIe throughput and link state, read off the poll path.

`nvmlDeviceGetPcieThroughput` blocks for its sampling window (about 20 ms per
counter on a real driver), so reading rx and tx of 8 GPUs inline would add
~320 ms to every poll. Instead:

- values are cached and refreshed at most every `interval_s` (default 2 s);
- a refresh reads all devices *concurrently*, one thread per device (ctypes
  releases the GIL during the call), so it costs ~2 windows, not 2 x GPUs;
- the first refresh runs inside the first poll (a one-shot `gputui snapshot`
  gets real numbers, ~40 ms on a real driver whatever the GPU count); later
  refreshes run in a background thread and the poll returns the cached values
  at once, up to `interval_s` + one refresh old.

The current link generation and width are read with the throughput (two cheap
calls): the link retrains down at idle and up under load, and a value as old
as the throughput beside it is as good as a fresh one, at half the calls.

A hard error in the sampler thread is not reported from there: the value
becomes None and the next poll's own queries find the failed device.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import pynvml

from gputui.telemetry.nvml_query import Call, DeviceFailed, DeviceQuery


def _rx(h: Any) -> Any:
    return pynvml.nvmlDeviceGetPcieThroughput(h, pynvml.NVML_PCIE_UTIL_RX_BYTES)


def _tx(h: Any) -> Any:
    return pynvml.nvmlDeviceGetPcieThroughput(h, pynvml.NVML_PCIE_UTIL_TX_BYTES)


def _gen(h: Any) -> Any:
    return pynvml.nvmlDeviceGetCurrPcieLinkGeneration(h)


def _width(h: Any) -> Any:
    return pynvml.nvmlDeviceGetCurrPcieLinkWidth(h)


_RX: tuple[Call, ...] = (_rx,)
_TX: tuple[Call, ...] = (_tx,)
_GEN: tuple[Call, ...] = (_gen,)
_WIDTH: tuple[Call, ...] = (_width,)
_KEYS = ("pcie_rx_kbs", "pcie_tx_kbs", "pcie_gen", "pcie_width")


class PcieSampler:
    """Cached (rx, tx) KiB/s and (generation, width) per device index, refreshed as described
    in the module docstring."""

    def __init__(self, interval_s: float, clock: Callable[[], float]) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._last: float | None = None
        self._thread: threading.Thread | None = None
        self.values: dict[int, tuple[int | None, int | None]] = {}
        self.links: dict[int, tuple[int | None, int | None]] = {}

    def maybe_refresh(self, devices: Sequence[tuple[int, DeviceQuery]]) -> None:
        now = self._clock()
        if self._last is not None and now - self._last < self.interval_s:
            return
        if self._thread is not None and self._thread.is_alive():
            return
        first = self._last is None
        self._last = now
        todo = [(i, q) for i, q in devices if not _all_unsupported(q)]
        if not todo:
            return
        if first:
            self._refresh(todo)
        else:
            self._thread = threading.Thread(
                target=self._refresh, args=(todo,), name="gputui-pcie", daemon=True
            )
            self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        t = self._thread
        if t is not None:
            t.join(timeout)

    def _refresh(self, todo: list[tuple[int, DeviceQuery]]) -> None:
        if len(todo) == 1:
            self._read_one(*todo[0])
            return
        threads = [threading.Thread(target=self._read_one, args=item, daemon=True) for item in todo]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def _read_one(self, index: int, q: DeviceQuery) -> None:
        try:
            rx = q.get("pcie_rx_kbs", _RX)
            tx = q.get("pcie_tx_kbs", _TX)
            gen = q.get("pcie_gen", _GEN)
            width = q.get("pcie_width", _WIDTH)
        except DeviceFailed:
            rx = tx = gen = width = None
        self.values[index] = (rx, tx)
        self.links[index] = (gen, width)


def _all_unsupported(q: DeviceQuery) -> bool:
    return all(key in q.unsupported for key in _KEYS)
