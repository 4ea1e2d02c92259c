"""NVML events end to end: NvmlSource -> real pynvml -> the simulated libnvidia-ml.so.1.

The fake's `events` scenario schedules XIDs, ECC errors and P-state/clock events on four
GPUs, T simulated seconds after init. Under a frozen clock (`FAKE_NVML_TIME`) nothing
fires until the process moves the clock, so a child process opens the source at T0,
polls, moves the clock past every event and polls again: the second poll must carry
each event the GPUs registered for, drained with a zero timeout, and nothing else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakenvml_lib import FAKE, NEEDS_FAKE, build_fake

pytestmark = NEEDS_FAKE

FROZEN = 1_800_000_000
EVENT_SYMBOLS = (
    "nvmlEventSetCreate nvmlEventSetFree nvmlDeviceGetSupportedEventTypes "
    "nvmlDeviceRegisterEvents nvmlEventSetWait nvmlEventSetWait_v2"
)
# Runs in the child: open, poll at T0, move the clock, poll twice (the second drains
# nothing: an event is delivered once), print each poll's events as the encoder writes them.
CHILD = f"""
import json, os
from gputui.model.snapshot_encode import snapshot_to_dict
from gputui.sources.nvml.source import NvmlSource
source = NvmlSource.open(with_host=False)
polls = [source.poll()]
os.environ["FAKE_NVML_TIME"] = str({FROZEN} + 30)
polls += [source.poll(), source.poll()]
source.close()
print(json.dumps([
    {{"events": snapshot_to_dict(p)["events"], "failed": [d.failed for d in p.devices],
      "notices": list(p.notices), "unsupported": [sorted(d.unsupported) for d in p.devices],
      "slowdown": [d.info.temp_slowdown_c for d in p.devices]}}
    for p in polls
]))
"""


def _scenario(folder: Path) -> Path:
    """The shipped events scenario without its process lines (they need live worker PIDs)."""
    kept = []
    for line in (FAKE / "scenarios" / "events.conf.in").read_text().splitlines():
        if line.strip().startswith("process"):
            continue
        if line.strip().startswith("mig"):
            line = " ".join(w for w in line.split("#")[0].split() if "@PID@" not in w)
        kept.append(line)
    out = folder / "events.conf"
    out.write_text("\n".join(kept) + "\n")
    return out


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("fakenvml-events")
    current, without = folder / "current", folder / "no-events"
    build_fake(f"BUILD={current}")
    build_fake("variant", f"VARIANT_DIR={without}", f"HIDE={EVENT_SYMBOLS}")
    return {"current": current, "no-events": without, "scenario": _scenario(folder)}


def _polls(lib: Path, scenario: Path) -> list[dict[str, Any]]:
    env = dict(os.environ)
    env.update(
        LD_LIBRARY_PATH=str(lib),
        FAKE_NVML_SCENARIO=str(scenario),
        FAKE_NVML_TIME=str(FROZEN),
        FAKE_NVML_QUIET="1",
    )
    out = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    polls: list[dict[str, Any]] = json.loads(out.stdout)
    return polls


def _seen(events: list[dict[str, Any]]) -> list[tuple[int, str, int, int | None]]:
    return [(e["gpu_index"], e["kind"], e["data"], e["gpu_instance_id"]) for e in events]


def test_each_scheduled_event_arrives_once_in_the_poll_after_it_fired(
    builds: dict[str, Path],
) -> None:
    first, second, third = _polls(builds["current"], builds["scenario"])
    assert first["events"] == []  # T = 0 events are never delivered (registered after)
    seen = _seen(second["events"])
    assert seen[:3] == [(0, "xid", 13, None), (0, "xid", 43, None), (3, "xid", 31, 2)]  # by T
    by_gpu: dict[int, list[tuple[str, int, int | None]]] = {}
    for gpu, kind, data, gi in seen:
        by_gpu.setdefault(gpu, []).append((kind, data, gi))
    assert by_gpu[0] == [
        ("xid", 13, None), ("xid", 43, None), ("pstate", 0, None), ("clock", 0, None),
        ("xid", 31, None), ("xid", 43, None),
    ]  # fmt: skip
    assert by_gpu[1] == [
        ("ecc_sbe", 0, None), ("ecc_dbe", 0, None), ("xid", 94, None), ("xid", 63, None),
        ("ecc_sbe", 0, None),
    ]  # fmt: skip
    assert by_gpu[2] == [("ecc_sbe", 0, None), ("ecc_dbe", 0, None), ("xid", 48, None),
                         ("xid", 63, None)]  # fmt: skip
    assert by_gpu[3][:2] == [("xid", 31, 2), ("xid", 43, 2)]  # MIG: the instance NVML named
    assert ("xid", 79, None) in by_gpu[3]
    assert {e["timestamp"] for e in second["events"]} == {second["events"][0]["timestamp"]}
    assert third["events"] == []  # delivered once
    assert second["failed"][3] is not None and third["failed"][3] is not None  # fell off the bus
    assert first["slowdown"] == [90, 90, 90, 90]  # the fake's default temp_slowdown_c


def test_a_driver_without_events_gives_none_and_no_noise(builds: dict[str, Path]) -> None:
    with_events = _polls(builds["current"], builds["scenario"])
    polls = _polls(builds["no-events"], builds["scenario"])
    assert any(p["events"] for p in with_events)  # the same scenario has them where NVML does
    assert [p["events"] for p in polls] == [[], [], []]
    for old, new in zip(polls, with_events, strict=True):
        assert old["notices"] == new["notices"]
        assert old["unsupported"] == new["unsupported"]
        assert old["failed"] == new["failed"]


ALERTS_CHILD = f"""
import json, os
from gputui.alerts.engine import AlertEngine
from gputui.alerts.rules import default_rules
from gputui.sources.nvml.source import NvmlSource
source = NvmlSource.open(with_host=False)
engine = AlertEngine(default_rules())
changes = engine.update(source.poll())
os.environ["FAKE_NVML_TIME"] = str({FROZEN} + 30)
changes += engine.update(source.poll())
source.close()
print(json.dumps([c.to_json() for c in changes]))
"""


def test_the_rules_turn_the_events_into_alerts_with_nvidia_actions(
    builds: dict[str, Path],
) -> None:
    env = dict(os.environ)
    env.update(
        LD_LIBRARY_PATH=str(builds["current"]),
        FAKE_NVML_SCENARIO=str(builds["scenario"]),
        FAKE_NVML_TIME=str(FROZEN),
        FAKE_NVML_QUIET="1",
    )
    out = subprocess.run(
        [sys.executable, "-c", ALERTS_CHILD], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    changes = json.loads(out.stdout)
    assert {c["state"] for c in changes} == {"firing"}
    xids = sorted((c["gpu"], int(c["message"].split("XID ")[1].split(":")[0])) for c in changes
                  if c["rule"] == "xid")  # fmt: skip
    assert xids == [("0", 13), ("0", 31), ("0", 43), ("1", 63), ("1", 94), ("2", 48), ("2", 63),
                    ("3", 31), ("3", 43), ("3", 79), ("3", 95)]  # fmt: skip
    by_xid = {c["message"].split(": ", 1)[1]: c for c in changes if c["rule"] == "xid"}
    assert any(k.startswith("XID 13") and v["action"] == "restart the application"
               for k, v in by_xid.items())  # fmt: skip
    assert sorted(c["gpu"] for c in changes if c["rule"] == "ecc_uncorrected") == ["1", "2", "3"]
    assert [c["gpu"] for c in changes if c["rule"] == "gpu_lost"] == ["3"]
