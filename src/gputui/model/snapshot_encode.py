"""A Snapshot as plain JSON-ready data, in the documented shape (docs/snapshot-json.md).

The encoder of `gputui snapshot --json`; model/snapshot_decode.py is its inverse
(decode(encode(s)) == s, tests/core/test_snapshot_codec.py).

Built by walking the record fields rather than listing them by hand, so a
field added to snapshot.py shows up here at once; tests check that
model/schema.py (the pydantic mirror) keeps up. No pydantic here: this is
on the `gputui snapshot --json` path, which must start fast.

JSON has no NaN or Infinity (`json.dumps` would write them, and strict
parsers such as `jq` or browsers refuse the whole document), so a reading that
is not a finite number is shown as what it is, not available: `null` for a
single value, `null` for a `load_average` with any such member, `[]` for a
`per_cpu_percent` with any (both as documented for "not measured"). The
snapshot timestamp is required, so a non-finite one is an error, never a
guess. `snapshot_to_json` writes with `allow_nan=False` as a second guard.
"""

from __future__ import annotations

import json
import math

from gputui.model.record import field_names

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    from typing import Any

    from gputui.model.snapshot import DeviceSnapshot, GpuProcess, HostSnapshot, Snapshot

SCHEMA_VERSION = 1


def _finite(value: object) -> bool:
    return not isinstance(value, float) or math.isfinite(value)


def _plain(value: object) -> Any:
    if isinstance(value, frozenset):
        return sorted(value)
    if isinstance(value, (tuple, list)):
        items = [_plain(v) for v in value]
        # A list of readings with an unusable member is "not measured" as a whole.
        return items if all(_finite(v) for v in value) else None
    if not _finite(value):
        return None
    return value


def _record(obj: object) -> dict[str, Any]:
    return {name: _plain(getattr(obj, name)) for name in field_names(obj)}


def _host(host: HostSnapshot) -> dict[str, Any]:
    out = _record(host)
    if out["per_cpu_percent"] is None:  # documented as a list: [] is its "not measured"
        out["per_cpu_percent"] = []
    return out


def _device(dev: DeviceSnapshot) -> dict[str, Any]:
    return {
        "info": _record(dev.info),
        "sample": _record(dev.sample) if dev.sample is not None else None,
        "failed": dev.failed,
        "unsupported": sorted(dev.unsupported),
        "mig_devices": [_record(m) for m in dev.mig_devices],
    }


def _process(proc: GpuProcess) -> dict[str, Any]:
    out = _record(proc)
    out["command"] = proc.command
    return out


def snapshot_to_dict(snapshot: Snapshot) -> dict[str, Any]:
    """The snapshot as JSON-ready data: no NaN or infinity anywhere (see the module docstring)."""
    if not math.isfinite(snapshot.timestamp):
        raise ValueError(f"snapshot timestamp is not a finite number: {snapshot.timestamp!r}")
    return {
        "schema_version": SCHEMA_VERSION,
        "timestamp": snapshot.timestamp,
        "source": snapshot.source,
        "driver_version": snapshot.driver_version,
        "cuda_driver_version": snapshot.cuda_driver_version,
        "nvml_version": snapshot.nvml_version,
        "notices": list(snapshot.notices),
        "host": _host(snapshot.host) if snapshot.host is not None else None,
        "devices": [_device(d) for d in snapshot.devices],
        "processes": [_process(p) for p in snapshot.processes],
        "events": [_record(e) for e in snapshot.events],
    }


def snapshot_to_json(snapshot: Snapshot, *, indent: int | None = 2) -> str:
    """The documented JSON text; `allow_nan=False` makes a non-finite number an error, not `NaN`."""
    return json.dumps(snapshot_to_dict(snapshot), indent=indent, allow_nan=False)
