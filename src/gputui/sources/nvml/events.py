"""NVML events (XID errors, ECC errors, P-state and clock changes), drained in the poll thread.

One event set for the source: at open every GPU registers the event types it supports
(`nvmlDeviceGetSupportedEventTypes`, limited to the five gputui reads: registering is
all or nothing, and a bit this pynvml does not name is refused). Each poll drains the
set with `nvmlEventSetWait_v2(set, 0)`: a zero timeout returns the oldest pending
event at once, or TIMEOUT when there is none, so a poll never waits for an event.

A driver or GPU without events (an old driver lacks the functions, a GPU answers
NOT_SUPPORTED, a MIG handle too) is not an error and not a notice: it simply has no
events. A wait that fails for any other reason than TIMEOUT ends that poll's drain
(GPU_IS_LOST comes back at once, every time, once a registered GPU is lost: the poll
itself reports the lost GPU); any other failure turns events off for the session.
"""

from __future__ import annotations

import contextlib

import pynvml

from gputui.model.snapshot import GpuEvent

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

# NVML event type bit -> GpuEvent kind: the five gputui reads.
KINDS: dict[int, str] = {
    getattr(pynvml, "nvmlEventTypeXidCriticalError", 0x08): "xid",
    getattr(pynvml, "nvmlEventTypeSingleBitEccError", 0x01): "ecc_sbe",
    getattr(pynvml, "nvmlEventTypeDoubleBitEccError", 0x02): "ecc_dbe",
    getattr(pynvml, "nvmlEventTypePState", 0x04): "pstate",
    getattr(pynvml, "nvmlEventTypeClock", 0x10): "clock",
}
WANTED = sum(KINDS)
# The most events one poll drains: a storm of events cannot stall the poll; the rest
# stay queued in NVML for the next poll.
MAX_PER_POLL = 256
# NVML's "no instance" value for gpuInstanceId/computeInstanceId.
NO_INSTANCE = 0xFFFFFFFF


def _address(handle: Any) -> int | None:
    """A device handle's pointer value: what identifies the GPU of an event."""
    import ctypes

    try:
        return ctypes.cast(handle, ctypes.c_void_p).value
    except (TypeError, ctypes.ArgumentError):
        return None


class EventReader:
    """The source's one event set and the GPUs registered in it (by handle address)."""

    def __init__(self, event_set: Any, indexes: dict[int, int]) -> None:
        self._set: Any = event_set
        self._indexes = indexes  # handle address -> NVML device index

    @classmethod
    def open(cls, handles: Sequence[tuple[int, Any]]) -> EventReader | None:
        """An event set with every GPU (index, handle) that supports events; None if none."""
        try:
            event_set = pynvml.nvmlEventSetCreate()
        except pynvml.NVMLError:  # FunctionNotFound on an old driver, NotSupported, ...
            return None
        indexes: dict[int, int] = {}
        for index, handle in handles:
            address = _address(handle)
            if address is None:
                continue
            try:
                types = int(pynvml.nvmlDeviceGetSupportedEventTypes(handle)) & WANTED
                if types:
                    pynvml.nvmlDeviceRegisterEvents(handle, types, event_set)
                    indexes[address] = index
            except pynvml.NVMLError:
                continue  # this GPU has no events (or is lost): the others still do
        if not indexes:
            _free(event_set)
            return None
        return cls(event_set, indexes)

    def drain(self, now: float) -> tuple[GpuEvent, ...]:
        """Every event pending now (up to MAX_PER_POLL), oldest first, stamped `now`."""
        if self._set is None:
            return ()
        out: list[GpuEvent] = []
        for _ in range(MAX_PER_POLL):
            try:
                data = pynvml.nvmlEventSetWait_v2(self._set, 0)
            except pynvml.NVMLError as exc:
                code = getattr(exc, "value", None)
                if code not in (pynvml.NVML_ERROR_TIMEOUT, pynvml.NVML_ERROR_GPU_IS_LOST):
                    self.close()  # events are off for the session, the poll goes on
                break
            event = self._event(data, now)
            if event is not None:
                out.append(event)
        return tuple(out)

    def _event(self, data: Any, now: float) -> GpuEvent | None:
        kind = KINDS.get(int(data.eventType))
        index = self._indexes.get(_address(data.device) or 0)
        if kind is None or index is None:
            return None
        gi, ci = int(data.gpuInstanceId), int(data.computeInstanceId)
        return GpuEvent(
            timestamp=now,
            gpu_index=index,
            kind=kind,
            data=min(int(data.eventData), NO_INSTANCE) if kind == "xid" else 0,
            gpu_instance_id=None if gi == NO_INSTANCE else gi,
            compute_instance_id=None if ci == NO_INSTANCE else ci,
        )

    def close(self) -> None:
        if self._set is not None:
            _free(self._set)
            self._set = None


def _free(event_set: Any) -> None:
    with contextlib.suppress(pynvml.NVMLError):
        pynvml.nvmlEventSetFree(event_set)
