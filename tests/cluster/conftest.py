"""Shared pieces of the cluster tests: small scenarios and exporter processes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .harness import ExporterProcess

# Two GPUs, one of which cannot report power; a process whose arguments hold a secret.
HOST_SCENARIO = """
seed = 7
hostname = "{hostname}"
driver_version = "550.54.15"
cuda_driver_version = "12.4"

[host]
cpu_count = 4
memory_total = "16 GiB"

[[gpu]]
name = "NVIDIA A100-SXM4-80GB"
memory_total = "81920 MiB"
compute_capability = "8.0"
architecture = "ampere"
power_limit_w = 400
max_sm_clock_mhz = 1410
max_mem_clock_mhz = 1593
{lost}

[[gpu]]
name = "NVIDIA GeForce RTX 3090"
memory_total = "24576 MiB"
compute_capability = "8.6"
architecture = "ampere"
power_limit_w = 350
max_sm_clock_mhz = 2100
max_mem_clock_mhz = 9751
unsupported = ["power", "fan", "ecc"]

[[process]]
gpu = 0
pid = 4242
user = "alice"
command = "python train.py --wandb-key=SECRET123 --lr 3e-4"
workload = "training"
gpu_memory = "30 GiB"
start_s = -600

[[process]]
gpu = 1
pid = 5151
user = "bob"
command = "/usr/bin/python3 serve.py"
workload = "inference"
gpu_memory = "8 GiB"
start_s = -300
"""


def write_scenario(folder: Path, hostname: str, *, lost_after_s: float | None = None) -> Path:
    path = folder / f"{hostname}.toml"
    lost = f"lost_after_s = {lost_after_s}" if lost_after_s is not None else ""
    path.write_text(HOST_SCENARIO.format(hostname=hostname, lost=lost))
    return path


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    return write_scenario(tmp_path, "node-a")


@pytest.fixture(scope="session")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One real Prometheus and fleet for every read-only test (starting one takes seconds)."""
    from .fleet import start_fleet
    from .harness import PROMETHEUS

    if PROMETHEUS is None:
        pytest.skip("needs the prometheus binary (apt install prometheus)")
    f = start_fleet(tmp_path_factory.mktemp("fleet"))
    yield f
    f.stop()


@pytest.fixture
def start_exporter() -> Iterator[type[ExporterProcess]]:
    started: list[ExporterProcess] = []

    class Tracked(ExporterProcess):
        def __init__(self, args: list[str], env: dict[str, str] | None = None) -> None:
            super().__init__(args, env)
            started.append(self)

    yield Tracked
    for e in started:
        e.stop()
