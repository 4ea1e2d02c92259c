"""The one place where an NVML call's error becomes a value, a remembered gap or a dead device.

Every NVML query of the source goes through `DeviceQuery.get` (in the spirit of
nvitop's `nvmlQuery`) so that error policy lives here and not in scattered
try/excepts:

- NotSupported / FunctionNotFound (or a missing function in an older binding):
  the field is N/A (`None`) *for good*: its key is remembered in `unsupported`
  and NVML is not asked again. A driver that lacks a newer entry point (the
  `_v3` process list, `_v2` memory info) moves on to the next, older variant
  instead; only when every variant is missing is the key unsupported.
- NoPermission: `None` for this poll only (permissions can change, e.g. a
  profiling restriction lifted) and noted in `no_permission`.
- GPU_IS_LOST, Unknown and other codes that mean the device (or the driver) is
  gone: `DeviceFailed` with a human reason; the caller marks that device failed
  and carries on with the others.
- Anything else (NotFound, Timeout, InsufficientSize, ...): `None` this time.
"""

from __future__ import annotations

from collections.abc import Callable

import pynvml

from gputui.core.textsafe import visible

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    from typing import Any

    Call = Callable[..., Any]  # one NVML query function; the handle comes first

# Codes after which the device cannot be trusted any more. Looked up by name so
# that an older binding lacking one of them still imports.
_HARD_ERROR_NAMES = (
    "NVML_ERROR_GPU_IS_LOST",
    "NVML_ERROR_UNKNOWN",
    "NVML_ERROR_RESET_REQUIRED",
    "NVML_ERROR_UNINITIALIZED",
    "NVML_ERROR_DRIVER_NOT_LOADED",
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
    "NVML_ERROR_IRQ_ISSUE",
    "NVML_ERROR_GPU_NOT_FOUND",
)
HARD_ERRORS: frozenset[int] = frozenset(
    int(getattr(pynvml, name)) for name in _HARD_ERROR_NAMES if hasattr(pynvml, name)
)
_NOT_SUPPORTED = pynvml.NVML_ERROR_NOT_SUPPORTED
_FUNCTION_NOT_FOUND = pynvml.NVML_ERROR_FUNCTION_NOT_FOUND
_NO_PERMISSION = pynvml.NVML_ERROR_NO_PERMISSION
# A versioned struct the driver does not know: try the older variant.
_VERSION_MISMATCH = getattr(pynvml, "NVML_ERROR_ARGUMENT_VERSION_MISMATCH", -1)
# Raised by newer bindings' unversioned wrappers when the versioned symbol is absent.
_LIBRARY_MISMATCH: type[Exception] = getattr(pynvml, "NVMLLibraryMismatchError", pynvml.NVMLError)

_REASONS = {
    "NVML_ERROR_GPU_IS_LOST": "GPU is lost (it fell off the bus or stopped responding); "
    "it needs a reset or a reboot",
    "NVML_ERROR_RESET_REQUIRED": "GPU requires a reset",
    "NVML_ERROR_UNKNOWN": "NVML reported an unknown error for this GPU",
    "NVML_ERROR_GPU_NOT_FOUND": "GPU is no longer present",
    "NVML_ERROR_DRIVER_NOT_LOADED": "the NVIDIA driver is no longer loaded",
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": "NVIDIA driver/library version mismatch "
    "(reboot after a driver update)",
}


def human_reason(exc: BaseException) -> str:
    """One sentence for a device that failed hard, for the UI's failed-device row."""
    code = getattr(exc, "value", None)
    for name, reason in _REASONS.items():
        if code is not None and code == getattr(pynvml, name, None):
            return reason
    return f"NVML error: {visible(str(exc))}"


class DeviceFailed(Exception):
    """The device failed hard; `reason` is what the UI shows instead of its values."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class DeviceQuery:
    """NVML calls for one device handle, with the error policy of the module docstring.

    Safe to share between the poll thread and the PCIe sampler thread: the only
    shared state is two sets and a dict updated by single, GIL-atomic operations.
    """

    __slots__ = ("handle", "unsupported", "no_permission", "_variant", "_handed")

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.unsupported: set[str] = set()
        self.no_permission: set[str] = set()
        self._variant: dict[str, int] = {}
        self._handed: dict[str, Any] = {}

    def hand_on(self, key: str, value: Any) -> None:
        """Keep `value`, just read, for the next `get(key)`, which returns it without asking.

        `open()` reads memory and BAR1 for the static facts and the first poll follows
        at once: this answers that poll from the same reading ("read once").
        """
        if value is not None:
            self._handed[key] = value

    def get(self, key: str, calls: tuple[Call, ...], *args: Any) -> Any:
        """Value of the first call in `calls` (newest variant first) the driver has, or None."""
        if key in self.unsupported:
            return None
        if self._handed:
            handed = self._handed.pop(key, None)
            if handed is not None:
                return handed
        i = self._variant.get(key, 0)
        while i < len(calls):
            try:
                value = calls[i](self.handle, *args)
            except pynvml.NVMLError as exc:
                code = exc.value
                if code in (_FUNCTION_NOT_FOUND, _VERSION_MISMATCH):
                    i += 1
                    self._variant[key] = i
                    continue
                if code == _NOT_SUPPORTED:
                    self.unsupported.add(key)
                    return None
                if code == _NO_PERMISSION:
                    self.no_permission.add(key)
                    return None
                if code in HARD_ERRORS:
                    raise DeviceFailed(human_reason(exc)) from exc
                return None
            except (_LIBRARY_MISMATCH, AttributeError):
                # newer binding's unversioned wrapper, or an older binding without the function
                i += 1
                self._variant[key] = i
                continue
            self.no_permission.discard(key)
            return value
        self.unsupported.add(key)
        return None
