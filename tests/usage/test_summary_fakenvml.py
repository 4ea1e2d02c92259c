"""The run statistics on polls read through the real NVML path (pynvml and the fake NVML
library): a power sweep integrates to its known energy, a scripted process memory is its
peak, a process's SM % gives its share of the energy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from gputui.model.snapshot import Snapshot
from gputui.model.snapshot_decode import decode_snapshot
from gputui.usage.summary import summarise
from tests.fakenvml_lib import NEEDS_FAKE, build_fake

pytestmark = NEEDS_FAKE

T0 = 1_800_000_000  # a multiple of the sweep's period: the sweep starts at its low end
POLLS = 31
# Power rises 100 -> 300 W over the first half of its 60 s period, one poll a second; a
# process the host cannot see (no such PID here) holds 8 GiB at 50 % SM.
SCENARIO = """
driver_version = 550.54.15
period_s = 60

[device]
name = NVIDIA GeForce RTX 3090
memory_total = 24576MiB
power_w = 100:300
util_gpu = 0:100
process = 4194000 8192MiB compute 50
"""
# One poll per simulated second (FAKE_NVML_TIME), each as `snapshot --json`'s document.
POLL = """
import json, os, sys
from gputui.model.snapshot_encode import snapshot_to_json
from gputui.sources.base import open_source
t0, n = float(sys.argv[1]), int(sys.argv[2])
os.environ["FAKE_NVML_TIME"] = str(t0)
source, _ = open_source("nvml", with_host=True)
for i in range(n):
    os.environ["FAKE_NVML_TIME"] = str(t0 + i)
    print(json.dumps(json.loads(snapshot_to_json(source.poll()))))
source.close()
"""


@pytest.fixture(scope="module")
def polls(tmp_path_factory: pytest.TempPathFactory) -> list[Snapshot]:
    folder = tmp_path_factory.mktemp("fakenvml-usage")
    build_fake(f"BUILD={folder}")
    scenario = folder / "usage.conf"
    scenario.write_text(SCENARIO)
    env = {
        **os.environ,
        "LD_LIBRARY_PATH": str(folder),
        "FAKE_NVML_SCENARIO": str(scenario),
        "FAKE_NVML_QUIET": "1",
    }
    out = subprocess.run(
        [sys.executable, "-c", POLL, str(T0), str(POLLS)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    ).stdout
    # the snapshots carry the wall time of the poll; the fake's clock is FAKE_NVML_TIME
    return [
        replace(decode_snapshot(json.loads(line)), timestamp=float(T0 + i))
        for i, line in enumerate(out.splitlines())
    ]


def test_energy_of_a_known_power_sweep(polls: list[Snapshot]) -> None:
    assert len(polls) == POLLS
    run = summarise(polls)
    (gpu,) = run.gpus
    # 100 -> 300 W linearly over 30 s: 200 W on average, 6000 J (NVML reports whole watts)
    assert gpu.energy_covered_s == 30
    assert gpu.energy_wh == pytest.approx(6000 / 3600, rel=0.005)
    assert gpu.util_max is not None and gpu.util_p50 is not None


def test_process_peak_sm_and_energy_share(polls: list[Snapshot]) -> None:
    run = summarise(polls)
    (proc,) = run.processes
    assert proc.pid == 4194000 and proc.start is None  # the host cannot see it
    assert proc.memory_peak == 8192 << 20 and proc.memory_peak_by_gpu == {0: 8192 << 20}
    assert proc.sm_mean == 50 and proc.energy_basis == "sm"
    assert proc.energy_wh == pytest.approx(run.gpus[0].energy_wh)  # alone on its GPU
    assert not proc.ended
