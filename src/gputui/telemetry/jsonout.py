"""A Snapshot as plain JSON-ready data, in the documented shape (docs/snapshot-json.md).

Built by walking the dataclass fields rather than listing them by hand, so a
field added to snapshot.py shows up here at once; tests check that
telemetry/schema.py (the pydantic mirror) keeps up. No pydantic here: this is
on the `gputui snapshot --json` path, which must start fast.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from gputui.telemetry.snapshot import DeviceSnapshot, GpuProcess, Snapshot

SCHEMA_VERSION = 1


def _plain(value: object) -> Any:
    if isinstance(value, frozenset):
        return sorted(value)
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def _record(obj: object) -> dict[str, Any]:
    return {f.name: _plain(getattr(obj, f.name)) for f in fields(obj)}  # type: ignore[arg-type]


def _device(dev: DeviceSnapshot) -> dict[str, Any]:
    return {
        "info": _record(dev.info),
        "sample": _record(dev.sample) if dev.sample is not None else None,
        "failed": dev.failed,
        "unsupported": sorted(dev.unsupported),
    }


def _process(proc: GpuProcess) -> dict[str, Any]:
    out = _record(proc)
    out["command"] = proc.command
    return out


def snapshot_to_dict(snapshot: Snapshot) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "timestamp": snapshot.timestamp,
        "source": snapshot.source,
        "driver_version": snapshot.driver_version,
        "cuda_driver_version": snapshot.cuda_driver_version,
        "nvml_version": snapshot.nvml_version,
        "notices": list(snapshot.notices),
        "host": _record(snapshot.host) if snapshot.host is not None else None,
        "devices": [_device(d) for d in snapshot.devices],
        "processes": [_process(p) for p in snapshot.processes],
    }
