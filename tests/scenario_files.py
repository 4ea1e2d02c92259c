"""Scenario-file fixtures shared by the simulated source's tests and the snapshot command's:
a small timeline scenario, and a writer of scenario files into the test's tmp_path.

Each folder's conftest imports the fixtures it uses from here (pytest finds fixtures by
name in a conftest's namespace).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

# A small scenario whose timeline the tests reason about directly.
TIMELINE = """
seed = 11
hostname = "unit-host"
driver_version = "550.54.15"
cuda_driver_version = "12.4"

[host]
cpu_count = 4
memory_total = "16 GiB"

[[gpu]]
name = "NVIDIA GeForce RTX 3090"
memory_total = "24 GiB"
compute_capability = "8.6"
power_limit_w = 350
max_sm_clock_mhz = 2100
max_mem_clock_mhz = 9751
unsupported = ["fan", "ecc"]

[[gpu]]
name = "NVIDIA A100-SXM4-80GB"
memory_total = "80 GiB"
power_limit_w = 400
max_sm_clock_mhz = 1410
max_mem_clock_mhz = 1593
lost_after_s = 30

[[process]]
gpu = 0
pid = 100
user = "alice"
command = "python train.py --lr 3e-4"
start_s = 10
end_s = 50
gpu_memory = "8 GiB"
warmup_s = 5
memory_ramp_s = 3

[[process]]
gpu = 1
pid = 200
user = "bob"
command = "python serve.py"
workload = "inference"
start_s = -100
gpu_memory = "20 GiB"
container = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
container_pid = 7
"""


@pytest.fixture
def write_scenario(tmp_path: Path) -> Callable[[str, str], Path]:
    def write(text: str, name: str = "scenario.toml") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def timeline(write_scenario: Callable[[str, str], Path]) -> Path:
    return write_scenario(TIMELINE, "timeline.toml")


@pytest.fixture
def timeline_text() -> str:
    return TIMELINE
