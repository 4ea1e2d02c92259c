"""GPU Performance Monitoring (GPM, Hopper and later): how much of the GPU a kernel used.

NVML's utilization only says that a kernel was running during the sample, so a
GPU can read 100 % while a third of its SMs work. GPM reads the same counters
DCGM's profiling fields do (`DCGM_FI_PROF_SM_ACTIVE`, ...), without DCGM:

- at open, `nvmlGpmQueryDeviceSupport` says whether the GPU has GPM; where it has
  not (older GPUs, a driver without the entry points, NotSupported) nothing is
  read again and the values stay None, so no view draws a zero;
- each poll takes one sample per GPU (and per GPU instance on a GPU in MIG mode,
  through `nvmlGpmMigSampleGet` on the parent's handle) and asks
  `nvmlGpmMetricsGet` for the mean of each metric between the previous sample and
  this one: the values cover the interval since the last poll, as DCGM's do;
- the first sample is taken at open; a read less than `MIN_INTERVAL_S` after it gives
  nothing and stays `pending` (a few milliseconds of counters say little): the
  dashboard's second poll has the figures, and a one-shot command reads them again after
  the short window it waits anyway for the host's CPU (`NvmlSource.host_again`).

A GPU lost between two samples raises `DeviceFailed` like every other query; any
other GPM error leaves that poll's values None (a metric NotSupported on its own
is None for good).
"""

from __future__ import annotations

import contextlib
import time

import pynvml

from gputui.sources.nvml.query import HARD_ERRORS, DeviceFailed, human_reason

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

MIN_INTERVAL_S = 0.1

# The four metrics shown, by NVML's ids (pynvml's NVML_GPM_METRIC_* values, spelled out so an
# older binding still imports), in GpmValues order.
METRIC_IDS: tuple[int, ...] = (
    2,  # SM_UTIL: share of SMs busy (DCGM_FI_PROF_SM_ACTIVE)
    3,  # SM_OCCUPANCY: warps resident vs the maximum (DCGM_FI_PROF_SM_OCCUPANCY)
    5,  # ANY_TENSOR_UTIL: tensor pipes active (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE)
    10,  # DRAM_BW_UTIL: DRAM bandwidth used (DCGM_FI_PROF_DRAM_ACTIVE)
)

# (sm_active, sm_occupancy, tensor_active, dram_active), percent 0-100, each None if unknown.
GpmValues = tuple[float | None, float | None, float | None, float | None]
NO_VALUES: GpmValues = (None, None, None, None)


def device_supports_gpm(handle: Any) -> bool:
    """Whether the GPU has GPM; a hard error (lost GPU) raises DeviceFailed."""
    query = getattr(pynvml, "nvmlGpmQueryDeviceSupport", None)
    if query is None:
        return False
    try:
        support = query(handle)
    except pynvml.NVMLError as exc:
        if exc.value in HARD_ERRORS:
            raise DeviceFailed(human_reason(exc)) from exc
        return False
    except (AttributeError, TypeError):
        return False
    return bool(getattr(support, "isSupportedDevice", 0))


class _Stream:
    """Two sample buffers for one GPU (or one GPU instance of it), swapped each poll."""

    __slots__ = ("previous", "current", "unsupported", "has_previous")

    def __init__(self) -> None:
        self.previous = pynvml.nvmlGpmSampleAlloc()
        self.current = pynvml.nvmlGpmSampleAlloc()
        self.has_previous = False
        self.unsupported: set[int] = set()

    def free(self) -> None:
        for sample in (self.previous, self.current):
            with contextlib.suppress(pynvml.NVMLError):
                pynvml.nvmlGpmSampleFree(sample)


class GpmReader:
    """GPM values of one GPU and of its GPU instances (see the module docstring)."""

    __slots__ = ("_handle", "_streams", "_opened_at", "_clock", "_dead", "_first")

    def __init__(
        self,
        handle: Any,
        gpu_instance_ids: tuple[int, ...] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._handle = handle
        self._clock = clock
        self._dead = False
        self._first = True
        self._streams: dict[int | None, _Stream] = {}
        try:
            for gi in (None, *gpu_instance_ids):
                self._streams[gi] = _Stream()
        except pynvml.NVMLError:
            self.close()
            self._dead = True
        self._opened_at = clock()
        if not self._dead:
            for gi, stream in self._streams.items():
                stream.has_previous = self._sample(gi, stream.previous)

    @property
    def active(self) -> bool:
        return not self._dead

    @property
    def pending(self) -> bool:
        """No reading yet: the first read came too soon after open (`read` gave {})."""
        return self._first and not self._dead

    def read(self) -> dict[int | None, GpmValues]:
        """Values since the last read, by GPU instance id (None: the whole GPU)."""
        if self._dead:
            return {}
        if self._first:
            if self._clock() - self._opened_at < MIN_INTERVAL_S:
                return {}  # too soon after open to say anything: ask again later (pending)
            self._first = False
        out: dict[int | None, GpmValues] = {}
        for gi, stream in self._streams.items():
            out[gi] = self._read_stream(gi, stream)
        return out

    def close(self) -> None:
        for stream in self._streams.values():
            stream.free()
        self._streams = {}
        self._dead = True

    def _sample(self, gi: int | None, into: Any) -> bool:
        try:
            if gi is None:
                pynvml.nvmlGpmSampleGet(self._handle, into)
            else:
                pynvml.nvmlGpmMigSampleGet(self._handle, gi, into)
        except pynvml.NVMLError as exc:
            if exc.value in HARD_ERRORS:
                raise DeviceFailed(human_reason(exc)) from exc
            return False
        return True

    def _read_stream(self, gi: int | None, stream: _Stream) -> GpmValues:
        if not self._sample(gi, stream.current):
            return NO_VALUES  # keep the previous sample: the next interval is longer
        values = self._metrics(stream) if stream.has_previous else NO_VALUES
        stream.previous, stream.current = stream.current, stream.previous
        stream.has_previous = True
        return values

    def _metrics(self, stream: _Stream) -> GpmValues:
        wanted = [m for m in METRIC_IDS if m not in stream.unsupported]
        if not wanted:
            return NO_VALUES
        request = pynvml.c_nvmlGpmMetricsGet_t()
        request.version = pynvml.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(wanted)
        request.sample1 = stream.previous
        request.sample2 = stream.current
        for i, metric in enumerate(wanted):
            request.metrics[i].metricId = metric
        try:
            pynvml.nvmlGpmMetricsGet(request)
        except pynvml.NVMLError as exc:
            if exc.value in HARD_ERRORS:
                raise DeviceFailed(human_reason(exc)) from exc
            return NO_VALUES
        found: dict[int, float | None] = {}
        for i, metric in enumerate(wanted):
            entry = request.metrics[i]
            if entry.nvmlReturn == pynvml.NVML_ERROR_NOT_SUPPORTED:
                stream.unsupported.add(metric)
            elif entry.nvmlReturn == pynvml.NVML_SUCCESS:
                found[metric] = _percent(entry.value)
        a, b, c, d = (found.get(m) for m in METRIC_IDS)
        return (a, b, c, d)


def _percent(value: float) -> float | None:
    """A GPM percentage, None when the driver hands back something that is not one."""
    v = float(value)
    if v != v or v < 0.0 or v > 100.5:  # NaN or out of range: the counters wrapped or lied
        return None
    return min(v, 100.0)
