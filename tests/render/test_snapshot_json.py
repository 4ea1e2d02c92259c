from __future__ import annotations

import json
from dataclasses import fields

import pytest
from pydantic import BaseModel, ValidationError

from gputui.core.resources import scenarios_dir
from gputui.model import schema
from gputui.model.snapshot import (
    DeviceInfo,
    DeviceSample,
    DeviceSnapshot,
    GpuEvent,
    GpuProcess,
    HostSnapshot,
    MigDevice,
    Snapshot,
)
from gputui.model.snapshot_encode import SCHEMA_VERSION, snapshot_to_dict
from gputui.sources.simulated.source import SimulatedSource


def _dict(name: str = "demo.toml", t: float = 60.0) -> dict[str, object]:
    src = SimulatedSource.from_scenario(scenarios_dir() / name, clock=lambda: t)
    return snapshot_to_dict(src.poll())


@pytest.mark.parametrize(
    ("dataclass", "model", "extra"),
    [
        (DeviceInfo, schema.DeviceInfoModel, set()),
        (DeviceSample, schema.DeviceSampleModel, set()),
        (DeviceSnapshot, schema.DeviceModel, set()),
        (HostSnapshot, schema.HostModel, set()),
        (MigDevice, schema.MigDeviceModel, set()),
        (GpuProcess, schema.ProcessModel, {"command"}),
        (Snapshot, schema.SnapshotModel, {"schema_version"}),
        (GpuEvent, schema.GpuEventModel, set()),
    ],
)
def test_schema_mirrors_every_dataclass_field(
    dataclass: type, model: type[BaseModel], extra: set[str]
) -> None:
    assert set(model.model_fields) == {f.name for f in fields(dataclass)} | extra


@pytest.mark.parametrize("name", ["demo.toml", "demo-8gpu.toml", "faults.toml", "mig.toml"])
@pytest.mark.parametrize("t", [0.0, 45.0])
def test_json_round_trips_through_the_schema(name: str, t: float) -> None:
    data = _dict(name, t)
    text = json.dumps(data)
    model = schema.SnapshotModel.model_validate_json(text)
    assert model.model_dump(mode="json") == json.loads(text)


def test_shape_and_conversions() -> None:
    data = _dict("faults.toml", 40.0)
    assert data["schema_version"] == SCHEMA_VERSION == 1
    assert data["source"] == "simulated"
    devices = data["devices"]
    assert isinstance(devices, list)
    gtx, lost = devices[0], devices[1]
    # frozensets become sorted lists
    assert gtx["unsupported"] == sorted(gtx["unsupported"]) and "fan_pct" not in gtx["unsupported"]
    assert "power_w" in gtx["unsupported"] and gtx["sample"]["power_w"] is None
    assert lost["sample"] is None and lost["failed"] == "GPU is lost"
    host = data["host"]
    assert isinstance(host, dict)
    assert isinstance(host["per_cpu_percent"], list) and isinstance(host["load_average"], list)
    for proc in data["processes"]:  # type: ignore[attr-defined]
        assert proc["cmdline"] is None or isinstance(proc["cmdline"], list)
        assert proc["command"] == (" ".join(proc["cmdline"]) if proc["cmdline"] else proc["name"])


def test_tuples_inside_samples_become_lists() -> None:
    data = _dict("demo-8gpu.toml", 0.0)
    reasons = [d["sample"]["throttle_reasons"] for d in data["devices"]]  # type: ignore[attr-defined]
    assert all(isinstance(r, list) for r in reasons)
    assert ["sw_power_cap"] in reasons


def test_schema_rejects_extra_and_wrong_fields() -> None:
    data = _dict()
    data["surprise"] = 1
    with pytest.raises(ValidationError):
        schema.SnapshotModel.model_validate(data)
    data = _dict()
    data["devices"][0]["sample"]["memory_used"] = "lots"  # type: ignore[index]
    with pytest.raises(ValidationError):
        schema.SnapshotModel.model_validate(data)


def test_json_schema_documents_units() -> None:
    js = schema.json_schema()
    assert js["title"] == "gputui snapshot"
    text = json.dumps(js)
    for word in ("bytes", "KiB/s", "percent", "watts"):
        assert word in text
    assert js["additionalProperties"] is False


def test_jsonout_does_not_import_pydantic() -> None:
    import subprocess
    import sys

    code = (
        "import sys, gputui.model.snapshot_encode, gputui.sources.simulated.source;"
        "print('pydantic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_docs_describe_every_field() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "snapshot-json.md").read_text()
    names = {
        f"`{f.name}`"
        for cls in (
            DeviceInfo,
            DeviceSample,
            DeviceSnapshot,
            HostSnapshot,
            GpuProcess,
            Snapshot,
            MigDevice,
            GpuEvent,
        )
        for f in fields(cls)
    }
    names |= {"`command`", "`schema_version`"}
    missing = sorted(n for n in names if f"| {n} |" not in doc)
    assert not missing, f"docs/snapshot-json.md lacks rows for {missing}"


@pytest.mark.parametrize(
    ("kind", "ok"),
    [
        ("compute", True),
        ("compute+graphics", True),
        ("graphics+mps", True),
        ("mps", True),
        ("cuda", False),
        ("compute+", False),
        ("", False),
    ],
)
def test_process_type_values(kind: str, ok: bool) -> None:
    proc = {"gpu_index": 0, "pid": 1, "type": kind, "command": None}
    if ok:
        schema.ProcessModel.model_validate(proc)
    else:
        with pytest.raises(ValidationError):
            schema.ProcessModel.model_validate(proc)


# --- no NaN or Infinity in the JSON ----------------------------------------------

_NON_FINITE = [float("nan"), float("inf"), float("-inf")]


@pytest.mark.parametrize("bad", _NON_FINITE, ids=repr)
def test_non_finite_readings_are_null_and_the_json_is_strict(bad: float) -> None:
    from gputui.model.snapshot_encode import snapshot_to_json

    snap = Snapshot(
        timestamp=1_767_225_600.0,
        source="nvml",
        devices=(
            DeviceSnapshot(
                info=DeviceInfo(index=0, name="G", power_limit_w=bad),
                sample=DeviceSample(power_w=bad, power_limit_w=bad, utilization_gpu=5),
            ),
        ),
        processes=(GpuProcess(gpu_index=0, pid=1, type="compute", cpu_percent=bad, running_s=bad),),
        host=HostSnapshot(
            hostname="h",
            cpu_percent=bad,
            per_cpu_percent=(1.0, bad),
            load_average=(0.5, bad, 0.1),
        ),
    )
    text = snapshot_to_json(snap)
    assert "NaN" not in text and "Infinity" not in text
    data = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard {c}"))
    device = data["devices"][0]
    assert device["info"]["power_limit_w"] is None
    assert device["sample"]["power_w"] is None and device["sample"]["power_limit_w"] is None
    assert device["sample"]["utilization_gpu"] == 5
    process = data["processes"][0]
    assert process["cpu_percent"] is None and process["running_s"] is None
    host = data["host"]
    assert host["cpu_percent"] is None and host["load_average"] is None
    assert host["per_cpu_percent"] == []
    schema.SnapshotModel.model_validate_json(text)


def test_finite_lists_are_kept() -> None:
    host = HostSnapshot(hostname="h", per_cpu_percent=(1.0, 2.5), load_average=(0.5, 0.25, 0.1))
    data = snapshot_to_dict(Snapshot(timestamp=0.0, source="nvml", devices=(), host=host))
    assert data["host"]["per_cpu_percent"] == [1.0, 2.5]
    assert data["host"]["load_average"] == [0.5, 0.25, 0.1]


@pytest.mark.parametrize("bad", _NON_FINITE, ids=repr)
def test_non_finite_timestamp_is_an_error_not_a_guess(bad: float) -> None:
    with pytest.raises(ValueError, match="timestamp is not a finite number"):
        snapshot_to_dict(Snapshot(timestamp=bad, source="nvml", devices=()))
