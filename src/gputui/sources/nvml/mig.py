"""MIG devices of a GPU in MIG mode, through NVML's MIG device handles.

At open, `open_mig_devices` walks `nvmlDeviceGetMigDeviceHandleByIndex` from 0
to `nvmlDeviceGetMaxMigDeviceCount` - 1 (the most the GPU can hold, not the
number configured) and stops at the first index NVML has no device for
(NOT_FOUND), as nvidia-smi and nvitop do. For each device it reads once what
does not change while it exists: name, UUID, GPU/compute instance ids, memory
and BAR1 totals. Each poll, `MigReader.read` asks each device for its memory,
BAR1 and utilization.

Every MIG handle has its own `DeviceQuery`, so the usual policy holds per MIG
device: NVML answers NotSupported for utilization on a MIG handle (and
nvidia-smi shows N/A): it is asked once, then shown as N/A for good. A hard
error on a MIG handle (the parent is lost) propagates as `DeviceFailed`, and
the caller marks the parent failed.
"""

from __future__ import annotations

import re

import pynvml

from gputui.core.textsafe import visible
from gputui.model.snapshot import MigDevice
from gputui.sources.nvml.calls import BAR1, NAME, UTILIZATION, UUID
from gputui.sources.nvml.calls import MEMORY_V1 as MEMORY
from gputui.sources.nvml.query import HARD_ERRORS, DeviceFailed, DeviceQuery, human_reason

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    from typing import Any

    from gputui.sources.nvml.query import Call

_field = object.__getattribute__
_PROFILE_RE = re.compile(r"\b(\d+g\.\d+gb(?:\+\w+)?)\b")
_NOT_AVAILABLE_ID = 0xFFFFFFFF
MAX_MIG_DEVICES = 8  # no GPU holds more than 7; a wild count must not loop long


def _max_count(h: Any) -> Any:
    return pynvml.nvmlDeviceGetMaxMigDeviceCount(h)


def _gi(h: Any) -> Any:
    return pynvml.nvmlDeviceGetGpuInstanceId(h)


def _ci(h: Any) -> Any:
    return pynvml.nvmlDeviceGetComputeInstanceId(h)


# NAME, UUID, BAR1 and UTILIZATION: a MIG handle answers the same calls as a GPU's (from
# calls.py); its memory is asked at v1 only.
MAX_COUNT: tuple[Call, ...] = (_max_count,)
GPU_INSTANCE: tuple[Call, ...] = (_gi,)
COMPUTE_INSTANCE: tuple[Call, ...] = (_ci,)


def _text(value: Any) -> str:
    text = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
    return visible(text)


def profile_of(name: str | None) -> str | None:
    """ "NVIDIA A100-SXM4-80GB MIG 3g.40gb" -> "3g.40gb": the profile is the name's last part."""
    if not name:
        return None
    found = _PROFILE_RE.findall(name)
    return found[-1] if found else None


def _instance_id(value: Any) -> int | None:
    return None if value is None or int(value) == _NOT_AVAILABLE_ID else int(value)


class _Mig:
    __slots__ = ("query", "static")

    def __init__(self, query: DeviceQuery, static: MigDevice) -> None:
        self.query = query
        self.static = static


def _handle(parent: Any, index: int) -> Any | None:
    """The MIG handle at `index`, None past the configured devices; hard errors raise."""
    try:
        return pynvml.nvmlDeviceGetMigDeviceHandleByIndex(parent, index)
    except pynvml.NVMLError as exc:
        if exc.value in HARD_ERRORS:
            raise DeviceFailed(human_reason(exc)) from exc
        return None  # NOT_FOUND past the last device (INVALID_ARGUMENT past the maximum)
    except AttributeError:  # a binding without MIG support
        return None


def open_mig_devices(parent: DeviceQuery) -> list[_Mig]:
    """The MIG devices configured on `parent`, with their static facts; [] when there are none."""
    count = parent.get("mig_device_count", MAX_COUNT)
    if not count:
        return []
    out: list[_Mig] = []
    for index in range(min(int(count), MAX_MIG_DEVICES)):
        handle = _handle(parent.handle, index)
        if handle is None:
            break
        q = DeviceQuery(handle)
        name = q.get("name", NAME)
        uuid = q.get("uuid", UUID)
        mem = q.get("memory", MEMORY)
        bar1 = q.get("bar1", BAR1)
        name_text = None if name is None else _text(name)
        static = MigDevice(
            index=index,
            gpu_instance_id=_instance_id(q.get("gpu_instance_id", GPU_INSTANCE)),
            compute_instance_id=_instance_id(q.get("compute_instance_id", COMPUTE_INSTANCE)),
            name=name_text,
            profile=profile_of(name_text),
            uuid=None if uuid is None else _text(uuid),
            memory_total=None if mem is None else int(_field(mem, "total")),
            bar1_total=None if bar1 is None else int(_field(bar1, "bar1Total")),
        )
        out.append(_Mig(q, static))
    return out


class MigReader:
    """Per-poll values of one GPU's MIG devices (see the module docstring)."""

    __slots__ = ("devices",)

    def __init__(self, devices: list[_Mig]) -> None:
        self.devices = devices

    def read(self) -> tuple[MigDevice, ...]:
        out = []
        for m in self.devices:
            q = m.query
            mem = q.get("memory", MEMORY)
            bar1 = q.get("bar1", BAR1)
            util = q.get("utilization", UTILIZATION)
            s = m.static
            out.append(
                MigDevice(
                    index=s.index,
                    gpu_instance_id=s.gpu_instance_id,
                    compute_instance_id=s.compute_instance_id,
                    name=s.name,
                    profile=s.profile,
                    uuid=s.uuid,
                    memory_total=s.memory_total if mem is None else int(_field(mem, "total")),
                    memory_used=None if mem is None else int(_field(mem, "used")),
                    memory_free=None if mem is None else int(_field(mem, "free")),
                    bar1_total=s.bar1_total,
                    bar1_used=None if bar1 is None else int(_field(bar1, "bar1Used")),
                    utilization_gpu=None if util is None else int(_field(util, "gpu")),
                    utilization_memory=None if util is None else int(_field(util, "memory")),
                )
            )
        return tuple(out)
