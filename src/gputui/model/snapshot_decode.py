"""The `gputui snapshot --json` document read back into a Snapshot: model/snapshot_encode.py's inverse.

A document comes from outside (a file, a recording), so this is a boundary: every
value is checked against its field's declared type, every number is bounded, and
every string is sanitised (`core.textsafe.visible`). Bad input is one line naming
the field, `SnapshotDecodeError` (a UserError: exit 2, no traceback), never a
traceback nor a record holding a wrong type.

The plan is read from the record classes' own annotations (model/record.py keeps
them), so a field added to snapshot.py is decoded without an edit here. No
pydantic (model/schema.py, the JSON Schema's mirror, costs ~100 ms to import).

What the encoder leaves out cannot come back: a reading that was not a finite number
is encoded as null (not measured) and decodes as None. Everything else round-trips
exactly: None stays None (never 0), lists become the tuples and frozensets the
records hold. A process's `command` is derived (cmdline joined, or name): it is
checked for its type and otherwise ignored.
"""

from __future__ import annotations

import json
import math

from gputui.core.errors import UserError
from gputui.core.textsafe import visible
from gputui.model import snapshot as model
from gputui.model.snapshot_encode import SCHEMA_VERSION

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Check = Callable[[object, str], Any]

# The largest integer kept (a 64-bit signed column holds it) and the largest magnitude of
# a float: beyond these a figure is not a reading but a broken document.
INT_MAX = 2**63 - 1
FLOAT_MAX = 1e18
# Fields that NVML and psutil define as 0-100 (fan_pct can pass 100, a process's
# cpu_percent counts every core: neither is here).
PERCENT_FIELDS = frozenset(
    {
        "utilization_gpu", "utilization_memory", "encoder_util", "decoder_util",
        "sm_util", "mem_util", "per_cpu_percent",
        *model.GPM_FIELDS,
    }
)  # fmt: skip
PROCESS_TYPES = frozenset({"compute", "graphics", "mps"})
# The most events one snapshot may carry: a poll drains at most sources/nvml/events.py's
# bound per GPU; a document with more is not one gputui wrote.
MAX_EVENTS = 4096
# The records of a snapshot, by the names their annotations use.
RECORDS: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        model.DeviceInfo,
        model.DeviceSample,
        model.MigDevice,
        model.DeviceSnapshot,
        model.GpuProcess,
        model.HostSnapshot,
        model.GpuEvent,
        model.Snapshot,
    )
}
# Keys the encoder writes beyond a record's fields (derived, not stored).
DERIVED = {"GpuProcess": frozenset({"command"}), "Snapshot": frozenset({"schema_version"})}


class SnapshotDecodeError(UserError):
    """A document that is not a snapshot this gputui reads: one line, naming the field."""


def _shown(value: object) -> str:
    text = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
    return visible(text if len(text) <= 40 else text[:37] + "...")


def _fail(where: str, what: str, value: object) -> SnapshotDecodeError:
    return SnapshotDecodeError(f"snapshot: {where or 'the document'}: {what}, got {_shown(value)}")


def _at(where: str, field: str) -> str:
    return f"{where}.{field}" if where else field


# --- one value per annotation ---------------------------------------------------------


def _int(value: object, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _fail(where, "expected an integer", value)
    if not 0 <= value <= INT_MAX:
        raise _fail(where, f"expected 0 to {INT_MAX}", value)
    return value


def _float(value: object, where: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise _fail(where, "expected a number", value)
    if isinstance(value, int):  # kept an int, as the source gave it (encoded as it was)
        if abs(value) > FLOAT_MAX:
            raise _fail(where, f"expected a finite number within +-{FLOAT_MAX:g}", value)
        return value  # an int is a float to a reader
    if not math.isfinite(value) or abs(value) > FLOAT_MAX:
        raise _fail(where, f"expected a finite number within +-{FLOAT_MAX:g}", value)
    return value


def _str(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise _fail(where, "expected a string", value)
    return visible(value)


def _bool(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(where, "expected true or false", value)
    return value


SCALARS: dict[str, Check] = {"int": _int, "float": _float, "str": _str, "bool": _bool}


def _optional(check: Check) -> Check:
    def optional(value: object, where: str) -> Any:
        return None if value is None else check(value, where)

    return optional


def _list(value: object, where: str) -> list[object]:
    if not isinstance(value, list):
        raise _fail(where, "expected a list", value)
    return value


def _tuple_of(check: Check, size: int | None) -> Check:
    def tuple_of(value: object, where: str) -> tuple[Any, ...]:
        items = _list(value, where)
        if size is not None and len(items) != size:
            raise _fail(where, f"expected {size} items", len(items))
        return tuple(check(v, f"{where}[{i}]") for i, v in enumerate(items))

    return tuple_of


def _frozenset_of(check: Check) -> Check:
    def frozenset_of(value: object, where: str) -> frozenset[Any]:
        items = _list(value, where)
        return frozenset(check(v, f"{where}[{i}]") for i, v in enumerate(items))

    return frozenset_of


def _percent(check: Check) -> Check:
    def percent(value: object, where: str) -> Any:
        number = check(value, where)
        if isinstance(number, (int, float)) and not 0 <= number <= 100:
            raise _fail(where, "expected a percentage, 0 to 100", value)
        return number

    return percent


def _check_of(annotation: str, field: str) -> Check:
    """The check of one annotation as snapshot.py spells it (`int | None`, `tuple[str, ...]`)."""
    text = annotation.strip()
    if text.endswith("| None"):
        return _optional(_check_of(text[: -len("| None")], field))
    for container in ("tuple[", "frozenset["):
        if text.startswith(container) and text.endswith("]"):
            args = [a.strip() for a in text[len(container) : -1].split(",")]
            if container == "frozenset[":
                return _frozenset_of(_check_of(args[0], field))
            if len(args) == 2 and args[1] == "...":
                return _tuple_of(_check_of(args[0], field), None)
            if len(set(args)) != 1:
                raise TypeError(f"{field}: no decoder for {annotation!r}")
            return _tuple_of(_check_of(args[0], field), len(args))
    if text in RECORDS:
        return _record_check(text)
    check = SCALARS.get(text)
    if check is None:
        raise TypeError(f"{field}: no decoder for {annotation!r}")
    return _percent(check) if field in PERCENT_FIELDS else check


# --- records ----------------------------------------------------------------------------

_PLANS: dict[str, tuple[tuple[str, Check, bool, object], ...]] = {}


def _plan(name: str) -> tuple[tuple[str, Check, bool, object], ...]:
    """Per field of record `name`: its check, and its default when it has one."""
    plan = _PLANS.get(name)
    if plan is None:
        cls: Any = RECORDS[name]
        annotations: dict[str, str] = cls.__record_annotations__
        defaults: dict[str, object] = cls.__record_defaults__
        plan = tuple(
            (field, _check_of(str(annotations[field]), field), field in defaults,
             defaults.get(field))
            for field in cls.__record_fields__
        )  # fmt: skip
        _PLANS[name] = plan
    return plan


def _record_check(name: str) -> Check:
    def check(value: object, where: str) -> Any:
        return _decode_record(name, value, where)

    return check


def _decode_record(name: str, value: object, where: str) -> Any:
    if not isinstance(value, dict):
        raise _fail(where, "expected an object", value)
    plan = _plan(name)
    # A key this gputui does not know is skipped: docs/snapshot-json.md promises that new
    # fields appear without a schema_version change, so an older reader must pass over them.
    if any(not isinstance(k, str) for k in value):
        raise SnapshotDecodeError(f"snapshot: {where or 'document'}: a key that is not text")
    values = []
    for field, check, has_default, default in plan:
        at = _at(where, field)
        if field in value:
            values.append(check(value[field], at))
        elif has_default:
            values.append(default)
        else:
            raise SnapshotDecodeError(f"snapshot: {at}: missing")
    record = RECORDS[name](*values)
    _check_record(name, record, value, where)
    return record


def _check_record(name: str, record: Any, value: dict[str, object], where: str) -> None:
    """What a type cannot say: a process's type words, a compute mode, `command`'s type."""
    if name == "GpuProcess":
        words = record.type.split("+")
        if not words or not set(words) <= PROCESS_TYPES:
            raise _fail(
                _at(where, "type"), 'expected "compute", "graphics", "mps" or joined', words
            )
        command = value.get("command")
        if command is not None and not isinstance(command, str):
            raise _fail(_at(where, "command"), "expected a string", command)
    elif name == "GpuEvent" and record.kind not in model.EVENT_KINDS:
        kinds = ", ".join(model.EVENT_KINDS)
        raise _fail(_at(where, "kind"), f"expected one of {kinds}", record.kind)
    elif name == "Snapshot" and len(record.events) > MAX_EVENTS:
        raise _fail(
            _at(where, "events"), f"expected at most {MAX_EVENTS} events", len(record.events)
        )
    elif name == "DeviceSample" and record.compute_mode not in (None, *model.COMPUTE_MODES):
        modes = ", ".join(model.COMPUTE_MODES)
        raise _fail(_at(where, "compute_mode"), f"expected one of {modes}", record.compute_mode)


# --- the document ---------------------------------------------------------------------


def decode_snapshot(document: object) -> model.Snapshot:
    """A Snapshot from the parsed `gputui snapshot --json` document; SnapshotDecodeError else."""
    if not isinstance(document, dict):
        raise _fail("", "expected an object", document)
    version = document.get("schema_version")
    if version != SCHEMA_VERSION:
        if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
            raise SnapshotDecodeError(
                f"snapshot: schema_version {version} is newer than this gputui reads "
                f"({SCHEMA_VERSION}): upgrade gputui"
            )
        raise _fail("schema_version", f"expected {SCHEMA_VERSION}", version)
    snapshot: model.Snapshot = _decode_record("Snapshot", document, "")
    return snapshot


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


def snapshot_from_json(text: str | bytes) -> model.Snapshot:
    """A Snapshot from the JSON text of `gputui snapshot --json`; SnapshotDecodeError else."""
    try:
        document = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise SnapshotDecodeError("snapshot: not JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, NaN, an integer of too many digits
        raise SnapshotDecodeError(f"snapshot: not JSON: {visible(str(exc))}") from None
    return decode_snapshot(document)
