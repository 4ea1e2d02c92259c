"""Device facts and MIG end to end: `gputui snapshot` -> real pynvml -> libnvidia-ml.so.1.

The library is the simulated one in ../shared/fakenvml (read-only: built here
into a temporary folder with gcc). It has MIG device handles (see its README),
so no private copy is needed. Skipped without gcc or the fake's sources.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from tests.fakenvml_lib import NEEDS_FAKE, build_fake

FROZEN = 1_767_225_600.0
MiB = 1 << 20

pytestmark = NEEDS_FAKE

SCENARIO = """
driver_version = 550.54.15
cuda_driver_version = 12.4

[device]
name = NVIDIA A100-SXM4-80GB
uuid = GPU-a1b2c3d4-e5f6-4789-8abc-def012345678
pci_bus_id = 00000000:41:00.0
memory_total = 81920MiB
compute_capability = 8.0
power_limit_w = 400
power_default_limit_w = 400
power_min_limit_w = 150
power_max_limit_w = 400
power_w = 250
bar1_total = 128GiB
pcie_gen = 3
pcie_max_gen = 4
pcie_width = 16
persistence_mode = on
compute_mode = exclusive_process
mig_mode = enabled
ecc_mode = on
unsupported = fan
mig = 3g.40gb 24000MiB 5001:20480MiB 5002:2048MiB
mig = 2g.20gb 5003:12288MiB
mig = 1g.10gb 2048MiB 5004:1800MiB

[device]
name = NVIDIA GeForce RTX 3090
uuid = GPU-5e3a2b1c-0d4f-4a6b-9c8d-7e6f5a4b3c21
pci_bus_id = 00000000:01:00.0
memory_total = 24576MiB
compute_capability = 8.6
power_w = 100
display_active = on
persistence_mode = off
unsupported = ecc, mig, energy, bar1, pcie_link
process = 5010 8192MiB compute
"""


@pytest.fixture(scope="module")
def snapshot_json(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("fakenvml")
    build_fake(f"BUILD={folder}")
    scenario = folder / "mig.conf"
    scenario.write_text(SCENARIO)
    env = dict(os.environ)
    env.update(
        LD_LIBRARY_PATH=str(folder),
        FAKE_NVML_SCENARIO=str(scenario),
        FAKE_NVML_TIME=str(FROZEN),
        FAKE_NVML_QUIET="1",
    )
    out = subprocess.run(
        [sys.executable, "-m", "gputui", "snapshot", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    text = subprocess.run(
        [sys.executable, "-m", "gputui", "snapshot"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert text.returncode == 0, text.stderr
    data: dict[str, Any] = json.loads(out.stdout)
    data["_text"] = text.stdout
    return data


def test_device_facts_through_the_real_binding(snapshot_json: dict[str, Any]) -> None:
    a100, rtx = snapshot_json["devices"]
    info, s = a100["info"], a100["sample"]
    assert info["pci_bus_id"] == "00000000:41:00.0"
    assert (info["power_default_limit_w"], info["power_min_limit_w"]) == (400.0, 150.0)
    assert info["power_max_limit_w"] == 400.0
    assert (info["pcie_max_gen"], info["pcie_max_width"]) == (4, 16)
    assert info["bar1_total"] == 128 << 30
    assert info["ecc_mode"] is True and info["mig_mode"] is True
    assert (s["pcie_gen"], s["pcie_width"]) == (3, 16)
    assert s["persistence_mode"] is True and s["display_active"] is False
    assert s["compute_mode"] == "exclusive_process"
    # the fake's counter: mean power x seconds since its epoch, in mJ
    assert s["energy_j"] == pytest.approx(250 * (FROZEN - 1.6e9), rel=1e-9)
    # unsupported on the 3090: N/A (null) and listed, never 0
    r_info, r = rtx["info"], rtx["sample"]
    assert r["display_active"] is True and r["persistence_mode"] is False
    for key in ("energy_j", "bar1_used", "pcie_gen", "pcie_width"):
        assert r[key] is None and key in rtx["unsupported"], key
    assert r_info["bar1_total"] is None and r_info["ecc_mode"] is None
    assert r_info["pcie_max_gen"] is None and r_info["mig_mode"] is None


def test_mig_devices_through_the_real_binding(snapshot_json: dict[str, Any]) -> None:
    a100, rtx = snapshot_json["devices"]
    migs = a100["mig_devices"]
    assert [m["profile"] for m in migs] == ["3g.40gb", "2g.20gb", "1g.10gb"]
    assert [m["gpu_instance_id"] for m in migs] == [1, 2, 3]
    assert [m["compute_instance_id"] for m in migs] == [0, 0, 0]
    assert [m["memory_total"] for m in migs] == [40192 * MiB, 19968 * MiB, 9984 * MiB]
    assert [m["memory_used"] for m in migs] == [24000 * MiB, 12288 * MiB, 2048 * MiB]
    assert all(m["uuid"].startswith("MIG-") for m in migs)
    assert migs[0]["name"] == "NVIDIA A100-SXM4-80GB MIG 3g.40gb"
    assert all(m["utilization_gpu"] is None for m in migs)  # NotSupported on MIG handles
    assert migs[0]["bar1_total"] is not None and migs[0]["bar1_total"] < 128 << 30
    assert rtx["mig_devices"] == []
    gi = {p["pid"]: p["gpu_instance_id"] for p in snapshot_json["processes"]}
    assert gi == {5001: 1, 5002: 1, 5003: 2, 5004: 3, 5010: None}
    # the MIG device index (gputui's "0:2", as nvitop) from the device that holds the GI
    index = {p["pid"]: p["mig_index"] for p in snapshot_json["processes"]}
    assert index == {5001: 0, 5002: 0, 5003: 1, 5004: 2, 5010: None}
    assert not any("MIG" in n for n in snapshot_json["notices"])


def test_snapshot_text_groups_processes_under_mig_devices(snapshot_json: dict[str, Any]) -> None:
    lines = snapshot_json["_text"].splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("  MIG ")]
    assert len(heads) == 3
    assert "GI 1/CI 0" in lines[heads[0]] and "mem 23.4/39.2 GiB" in lines[heads[0]]
    assert [lines[i].split()[1:3] for i in heads] == [
        ["0:0", "3g.40gb"],
        ["0:1", "2g.20gb"],
        ["0:2", "1g.10gb"],
    ]
    pids_under_first = {line.split()[0] for line in lines[heads[0] + 1 : heads[1]]}
    assert pids_under_first == {"5001", "5002"}
