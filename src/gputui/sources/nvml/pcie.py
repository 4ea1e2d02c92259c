"""PCIe throughput and link state, read off the poll path.

`nvmlDeviceGetPcieThroughput` blocks for its sampling window (about 20 ms per
counter on a real driver), so reading rx and tx of 8 GPUs inline would add
~320 ms to every poll. Instead:

- values are cached and refreshed at most every `interval_s` (default 2 s);
- a refresh reads all devices *concurrently*, one thread per device (ctypes
  releases the GIL during the call), so it costs ~2 windows, not 2 x GPUs;
  the threads are kept between refreshes;
- the first refresh runs inside the first poll (a one-shot `gputui snapshot`
  gets real numbers, ~40 ms on a real driver whatever the GPU count); later
  refreshes run in those threads and the poll returns the cached values
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

import pynvml

from gputui.sources.nvml.query import DeviceFailed, DeviceQuery

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    from typing import Any

    from gputui.sources.nvml.query import Call


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
    in the module docstring.

    The reading threads are kept, one per device, between refreshes: starting a
    thread costs ~0.2 ms of CPU, 9 threads every 2 s were ~15 % of a dashboard
    poll's CPU on 8 GPUs. They are daemons: a read hung in the driver never holds
    up the exit.
    """

    def __init__(self, interval_s: float, clock: Callable[[], float]) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._last: float | None = None
        self._workers: dict[int, Any] = {}  # device index -> its worker's SimpleQueue
        self._pending = 0  # reads of the current refresh not finished yet
        self._done = threading.Condition()
        self.values: dict[int, tuple[int | None, int | None]] = {}
        self.links: dict[int, tuple[int | None, int | None]] = {}

    def maybe_refresh(self, devices: Sequence[tuple[int, DeviceQuery]]) -> None:
        now = self._clock()
        if self._last is not None and now - self._last < self.interval_s:
            return
        if self._pending:
            return  # the last refresh is still out (a slow driver): no pile-up
        first = self._last is None
        self._last = now
        todo = [(i, q) for i, q in devices if not _all_unsupported(q)]
        if not todo:
            return
        if first and len(todo) == 1:
            self._read_one(*todo[0])  # one GPU, first poll: no thread at all
            return
        with self._done:
            self._pending = len(todo)
        for item in todo:
            self._worker(item[0]).put(item)
        if first:
            self.join()  # the first poll (a one-shot snapshot) waits for real numbers

    def join(self, timeout: float | None = None) -> None:
        """Wait until the refresh in flight, if any, has read every device."""
        with self._done:
            self._done.wait_for(lambda: self._pending == 0, timeout)

    def close(self) -> None:
        """Let the worker threads end (each after its current read)."""
        for q in self._workers.values():
            q.put(None)
        self._workers.clear()

    def _worker(self, index: int) -> Any:
        q = self._workers.get(index)
        if q is None:
            q = _simple_queue()
            self._workers[index] = q
            threading.Thread(
                target=self._serve, args=(q,), name=f"gputui-pcie-{index}", daemon=True
            ).start()
        return q

    def _serve(self, q: Any) -> None:
        while (item := q.get()) is not None:
            try:
                self._read_one(*item)
            finally:
                with self._done:
                    self._pending -= 1
                    if self._pending <= 0:
                        self._pending = 0
                        self._done.notify_all()

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


def _simple_queue() -> Any:
    """queue.SimpleQueue, from the C module queue.py itself takes it from: queue.py (with
    heapq) costs ~1 ms of import on `gputui snapshot --json` for a class it only re-exports."""
    try:
        from _queue import SimpleQueue
    except ImportError:  # not CPython
        from queue import SimpleQueue
    return SimpleQueue()


def _all_unsupported(q: DeviceQuery) -> bool:
    return all(key in q.unsupported for key in _KEYS)
