"""`gputui snapshot` through the real pynvml binding and the simulated NVML library: a lost GPU
makes the exit status 3 (as `gputui fit` when it answers in part), the host's and the
processes' CPU are measured (not N/A) where psutil can read them, and a GPU that reports no
memory at all reads "mem N/A", not "N/A/N/A GiB"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.fakenvml_lib import NEEDS_FAKE, build_fake

pytestmark = NEEDS_FAKE

SCENARIO = """
driver_version = 550.54.15
cuda_driver_version = 12.4

[device]
name = NVIDIA GeForce RTX 3090
memory_total = 24576MiB
process = {pid} 2048MiB compute

[device]
name = NVIDIA GeForce RTX 3080
memory_total = 10240MiB
unsupported = memory

[device]
name = NVIDIA GeForce RTX 3070
memory_total = 8192MiB
lost = true
"""


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    folder = tmp_path_factory.mktemp("fakenvml-oneshot")
    build_fake(f"BUILD={folder}")
    # a real process for the GPU's process list, kept busy so its CPU is not 0
    worker = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        scenario = folder / "oneshot.conf"
        scenario.write_text(SCENARIO.format(pid=worker.pid))
        yield {
            **os.environ,
            "LD_LIBRARY_PATH": str(folder),
            "FAKE_NVML_SCENARIO": str(scenario),
            "FAKE_NVML_QUIET": "1",
        }
    finally:
        worker.kill()
        worker.wait()


def snapshot(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gputui", "snapshot", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_lost_gpu_makes_the_exit_status_3(env: dict[str, str]) -> None:
    for args in ((), ("--json",)):
        r = snapshot(env, *args)
        assert r.returncode == 3, (args, r.stdout, r.stderr)  # GPU 2 is lost: an answer in part


def test_cpu_of_the_host_and_the_processes_is_measured(env: dict[str, str]) -> None:
    lines = snapshot(env).stdout.splitlines()
    assert lines[1].startswith("CPU ") and not lines[1].startswith("CPU N/A"), lines[1]
    (proc,) = [ln for ln in lines if "while True" in ln]
    cpu = proc.split("cpu", 1)[1].split()[0]
    assert cpu != "N/A" and cpu.endswith("%") and float(cpu[:-1]) > 0, proc
    data = json.loads(snapshot(env, "--json").stdout)
    assert data["host"]["cpu_percent"] is not None
    (p,) = data["processes"]
    assert p["cpu_percent"] is not None and p["cpu_percent"] > 0


def test_a_gpu_with_no_memory_data_reads_mem_na(env: dict[str, str]) -> None:
    lines = snapshot(env).stdout.splitlines()
    (gpu1,) = [ln for ln in lines if ln.startswith("[1]")]
    assert "mem N/A " in gpu1 and "N/A/N/A" not in gpu1, gpu1
    (gpu2,) = [ln for ln in lines if ln.startswith("[2]")]
    assert "FAILED" in gpu2
