"""The snapshot encoder and decoder round-trip exactly, and the decoder names what it refuses.

encode (`gputui snapshot --json`'s document) then decode gives back an equal Snapshot:
MIG devices, processes, the host, None kept apart from 0, tuples and frozensets, the
GPM figures. Hostile documents are tests/fuzz/test_snapshot_document_properties.py's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from gputui.model.snapshot import DeviceInfo, DeviceSample, DeviceSnapshot, Snapshot
from gputui.model.snapshot_decode import (
    SnapshotDecodeError,
    decode_snapshot,
    snapshot_from_json,
)
from gputui.model.snapshot_encode import snapshot_to_dict, snapshot_to_json
from tests.snapshot_strategies import SNAPSHOTS

SCENARIOS = sorted(
    (Path(__file__).resolve().parents[2] / "src/gputui/sources/simulated/scenarios").glob("*.toml")
)


@settings(max_examples=40, deadline=None)
@given(SNAPSHOTS)
def test_encode_then_decode_gives_the_same_snapshot(snapshot: Snapshot) -> None:
    text = snapshot_to_json(snapshot)
    decoded = snapshot_from_json(text)
    assert decoded == snapshot
    assert snapshot_to_json(decoded) == text  # the same types too: 0 stays 0, 1.0 stays 1.0


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_a_simulated_poll_round_trips(path: Path) -> None:
    """The shipped scenarios: MIG devices (mig.toml), lost and failing GPUs (faults.toml)."""
    from gputui.sources.simulated.source import SimulatedSource

    source = SimulatedSource.from_scenario(path, clock=lambda: 90.0)
    snapshot = source.poll()
    assert decode_snapshot(json.loads(snapshot_to_json(snapshot))) == snapshot


def test_none_and_zero_and_the_containers_come_back_as_they_were() -> None:
    sample = DeviceSample(utilization_gpu=0, fan_pct=None, throttle_reasons=(), sm_active_pct=0.0)
    device = DeviceSnapshot(DeviceInfo(0, "GPU"), sample, unsupported=frozenset({"fan_pct"}))
    back = snapshot_from_json(snapshot_to_json(Snapshot(1.5, "nvml", (device,))))
    got = back.devices[0]
    assert got.sample is not None
    assert (got.sample.utilization_gpu, got.sample.fan_pct) == (0, None)
    assert got.sample.throttle_reasons == () and type(got.sample.throttle_reasons) is tuple
    assert got.sample.sm_active_pct == 0.0 and got.sample.tensor_active_pct is None
    assert got.unsupported == frozenset({"fan_pct"}) and type(got.unsupported) is frozenset


def _document() -> dict[str, Any]:
    sample = DeviceSample(power_w=100.0, utilization_gpu=50)
    device = DeviceSnapshot(DeviceInfo(0, "GPU"), sample)
    return snapshot_to_dict(Snapshot(1.5, "nvml", (device,)))


def _set(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    *parents, last = path.split(".")
    node: Any = doc
    for key in parents:
        node = node[int(key)] if key.isdigit() else node[key]
    node[last] = value
    return doc


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("devices.0.sample.power_w", "abc", "devices[0].sample.power_w: expected a number"),
        ("devices.0.sample.power_w", float("inf"), "devices[0].sample.power_w: expected a finite"),
        ("devices.0.sample.utilization_gpu", 101, "utilization_gpu: expected a percentage"),
        ("devices.0.sample.utilization_gpu", True, "utilization_gpu: expected an integer"),
        ("devices.0.info.index", -1, "devices[0].info.index: expected 0 to"),
        ("devices.0.info.index", 2**64, "devices[0].info.index: expected 0 to"),
        ("devices.0.unsupported", "fan_pct", "devices[0].unsupported: expected a list"),
        ("devices.0.info.name", None, "devices[0].info.name: expected a string"),
        ("timestamp", None, "timestamp: expected a number"),
        ("schema_version", 0, "schema_version: expected 1"),
        ("schema_version", 2, "schema_version 2 is newer than this gputui reads (1)"),
        ("devices", {}, "devices: expected a list"),
        (
            "events",
            [{"timestamp": 1.0, "gpu_index": 0, "kind": "fire"}],
            "events[0].kind: expected one of",
        ),
        (
            "events",
            [{"timestamp": 1.0, "gpu_index": 0, "kind": "xid", "data": -1}],
            "events[0].data: expected 0 to",
        ),
        (
            "events",
            [{"timestamp": 1.0, "gpu_index": 0, "kind": "clock"}] * 4097,
            "events: expected at most 4096",
        ),
    ],
)
def test_a_bad_field_is_one_line_naming_it(path: str, value: Any, message: str) -> None:
    doc = _set(_document(), path, value)
    with pytest.raises(SnapshotDecodeError) as caught:
        decode_snapshot(doc)
    text = str(caught.value)
    assert message in text and "\n" not in text
    assert caught.value.exit_code == 2


def test_a_field_this_gputui_does_not_know_is_passed_over() -> None:
    """docs/snapshot-json.md: new fields appear without a schema_version change, so a
    document from a newer gputui decodes here with its known fields intact."""
    doc = _document()
    plain = decode_snapshot(doc)
    newer = _set(_set(_document(), "devices.0.sample.from_a_newer_gputui", 1), "extra", {"a": 1})
    assert decode_snapshot(newer) == plain


def test_a_missing_required_field_is_named() -> None:
    doc = _document()
    del doc["devices"][0]["info"]["name"]
    with pytest.raises(SnapshotDecodeError, match=r"devices\[0\]\.info\.name: missing"):
        decode_snapshot(doc)


def test_strings_are_sanitised_at_the_boundary() -> None:
    doc = _set(_document(), "devices.0.info.name", "GPU\x1b]0;pwn\x07")
    assert decode_snapshot(doc).devices[0].info.name == "GPU^[]0;pwn^G"


@pytest.mark.parametrize("text", ["", "[", "NaN", '{"a": Infinity}', "[" * 100_000, "9" * 5000])
def test_text_that_is_not_a_snapshot_is_one_line(text: str) -> None:
    with pytest.raises(SnapshotDecodeError) as caught:
        snapshot_from_json(text)
    assert "\n" not in str(caught.value)


def test_the_decoder_imports_no_pydantic() -> None:
    import subprocess
    import sys

    code = (
        "import sys, gputui.model.snapshot_decode\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'dataclasses'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
