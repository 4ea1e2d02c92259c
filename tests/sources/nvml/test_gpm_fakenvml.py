"""GPM end to end: `gputui snapshot` -> real pynvml -> the simulated libnvidia-ml.so.1.

The fake's `large` scenario has four H100s with GPM (GPU 3 "busy but idle": NVML's
utilization near 100 % with few SMs active) and four A100s without; `mig-gpm` has an
H100 in MIG mode with per-instance GPM. Under a frozen clock with
`FAKE_NVML_GPM_STEP_S`, the n-th sample of a GPU is stamped T + n x step, so the
source's two samples (one at open, one at the poll) cover [T, T + step], and the
fake's README gives the exact mean for GPU 3 over [1800000000, +10 s]: 29.23 % of
the SMs active.
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

FROZEN = "1800000000"
GPM_FIELDS = ("sm_active_pct", "sm_occupancy_pct", "tensor_active_pct", "dram_active_pct")
GPM_SYMBOLS = (
    "nvmlGpmQueryDeviceSupport nvmlGpmSampleAlloc nvmlGpmSampleFree nvmlGpmSampleGet "
    "nvmlGpmMigSampleGet nvmlGpmMetricsGet"
)

pytestmark = NEEDS_FAKE


def _scenario(folder: Path, name: str) -> Path:
    """A shipped scenario without its process lines (they need live worker PIDs)."""
    lines = (FAKE / "scenarios" / f"{name}.conf.in").read_text().splitlines()
    kept = []
    for line in lines:
        if line.strip().startswith("process"):
            continue
        if line.strip().startswith("mig"):  # keep the MIG device, drop its @PID@:MEM entries
            line = " ".join(w for w in line.split("#")[0].split() if "@PID@" not in w)
        kept.append(line)
    out = folder / f"{name}.conf"
    out.write_text("\n".join(kept) + "\n")
    return out


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("fakenvml-gpm")
    current, without = folder / "current", folder / "no-gpm"
    build_fake(f"BUILD={current}")
    build_fake("variant", f"VARIANT_DIR={without}", f"HIDE={GPM_SYMBOLS}")
    return {"current": current, "no-gpm": without, "folder": folder}


def _run(lib: Path, scenario: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.update(
        LD_LIBRARY_PATH=str(lib),
        FAKE_NVML_SCENARIO=str(scenario),
        FAKE_NVML_TIME=FROZEN,
        FAKE_NVML_GPM_STEP_S="10",
        FAKE_NVML_QUIET="1",
    )
    out = subprocess.run(
        [sys.executable, "-m", "gputui", "snapshot", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out


def _json(lib: Path, scenario: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_run(lib, scenario, "--json").stdout)
    return data


def test_gpm_reads_the_mean_over_the_interval(builds: dict[str, Path]) -> None:
    scenario = _scenario(builds["folder"], "large")
    devices = _json(builds["current"], scenario)["devices"]
    busy_idle = devices[3]["sample"]
    assert busy_idle["utilization_gpu"] >= 97
    assert busy_idle["sm_active_pct"] == pytest.approx(29.23, abs=0.01)  # the fake's README
    # the scenario's curves for this GPU (gpm_KEY = LO:HI): a mean stays within them
    assert 4 <= busy_idle["sm_occupancy_pct"] <= 11
    assert 2 <= busy_idle["tensor_active_pct"] <= 9
    assert 6 <= busy_idle["dram_active_pct"] <= 15
    for dev in devices[:4]:  # the H100s: all four figures, within 0-100
        for name in GPM_FIELDS:
            value = dev["sample"][name]
            assert value is not None and 0.0 <= value <= 100.0, (dev["index"], name)
    for dev in devices[4:]:  # the A100s have no GPM: null, listed, never 0
        for name in GPM_FIELDS:
            assert dev["sample"][name] is None
            assert name in dev["unsupported"]


def test_the_text_says_when_busy_and_sms_disagree(builds: dict[str, Path]) -> None:
    scenario = _scenario(builds["folder"], "large")
    lines = [
        line
        for line in _run(builds["current"], scenario).stdout.splitlines()
        if line.startswith("[")
    ]
    assert "SMs 29% (busy, SMs mostly idle)" in lines[3]
    assert "SMs" in lines[0] and "mostly idle" not in lines[0]
    assert all("SMs" not in line for line in lines[4:])  # no GPM, nothing drawn


def test_gpm_per_gpu_instance_on_mig(builds: dict[str, Path]) -> None:
    scenario = _scenario(builds["folder"], "mig-gpm")
    h100 = _json(builds["current"], scenario)["devices"][2]
    migs = h100["mig_devices"]
    assert [m["profile"] for m in migs] == ["4g.40gb", "1g.20gb", "1g.20gb"]
    training, idle, _ = migs
    assert 35 <= training["sm_active_pct"] <= 82  # its own gpm_sm_active curve
    assert 9 <= idle["sm_active_pct"] <= 21
    assert 18 <= training["sm_occupancy_pct"] <= 40
    assert all(m["utilization_gpu"] is None for m in migs)  # NVML has none on MIG


def test_a_driver_without_gpm_entry_points_reads_the_rest(builds: dict[str, Path]) -> None:
    scenario = _scenario(builds["folder"], "large")
    devices = _json(builds["no-gpm"], scenario)["devices"]
    assert all(d["failed"] is None for d in devices)
    for dev in devices:
        assert dev["sample"]["utilization_gpu"] is not None
        assert all(dev["sample"][name] is None for name in GPM_FIELDS)
