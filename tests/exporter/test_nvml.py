"""`gputui exporter --source nvml` end to end: real pynvml -> libnvidia-ml.so.1 (the fake in
../shared/fakenvml, built here), so the energy counter, unsupported fields and a lost GPU go
through the same path as on a GPU machine. Skipped without gcc or the fake's sources."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.fakenvml_lib import NEEDS_FAKE, build_fake

FROZEN = 1_767_225_600.0

pytestmark = NEEDS_FAKE

SCENARIO = """
driver_version = 550.54.15
cuda_driver_version = 12.4

[device]
name = NVIDIA A100-SXM4-80GB
uuid = GPU-a1b2c3d4-e5f6-4789-8abc-def012345678
pci_bus_id = 00000000:41:00.0
memory_total = 81920MiB
memory_used = 20480MiB
compute_capability = 8.0
power_w = 100
util_gpu = 50

[device]
name = NVIDIA GeForce RTX 3090
uuid = GPU-5e3a2b1c-0d4f-4a6b-9c8d-7e6f5a4b3c21
memory_total = 24576MiB
compute_capability = 8.6
unsupported = energy, power, fan

[device]
name = NVIDIA L4
uuid = GPU-00000000-1111-2222-3333-444444444444
lost = true
"""


@pytest.fixture(scope="module")
def nvml_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    folder = tmp_path_factory.mktemp("fakenvml")
    build_fake(f"BUILD={folder}")
    scenario = folder / "scenario.conf"
    scenario.write_text(SCENARIO)
    yield {
        "LD_LIBRARY_PATH": str(folder),
        "FAKE_NVML_SCENARIO": str(scenario),
        "FAKE_NVML_TIME": str(FROZEN),
        "FAKE_NVML_QUIET": "1",
    }


def test_nvml_exporter_energy_unsupported_and_lost(
    start_exporter: type, nvml_env: dict[str, str]
) -> None:
    exp = start_exporter(
        ["--source", "nvml", "--listen", "127.0.0.1:0", "--interval", "0.5"], env=nvml_env
    )
    text = ""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and "gputui_gpu_up" not in text:
        text = urllib.request.urlopen(exp.url, timeout=5).read().decode()
        time.sleep(0.1)
    got: dict[str, dict[str, float]] = {}
    labels_of: dict[str, dict[str, str]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if "gpu" in s.labels:
                got.setdefault(s.name, {})[s.labels["gpu"]] = s.value
                labels_of.setdefault(s.labels["gpu"], dict(s.labels))
    # energy: the fake's mean power x seconds since its epoch, in mJ; absent where unsupported
    assert got["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"] == {
        "0": float(int(100 * (FROZEN - 1.6e9) * 1000))
    }
    assert got["DCGM_FI_DEV_POWER_USAGE"] == {"0": 100.0}
    assert got["DCGM_FI_DEV_FB_USED"]["0"] == 20480.0
    assert got["DCGM_FI_DEV_GPU_UTIL"]["0"] == 50.0
    assert "1" not in got.get("gputui_gpu_fan_percent", {})
    # the lost L4: gputui_gpu_up 0 and nothing else
    assert got["gputui_gpu_up"] == {"0": 1.0, "1": 1.0, "2": 0.0}
    assert [n for n, per in got.items() if "2" in per] == ["gputui_gpu_up"]
    assert labels_of["0"]["modelName"] == "NVIDIA A100-SXM4-80GB"
    assert labels_of["0"]["UUID"] == "GPU-a1b2c3d4-e5f6-4789-8abc-def012345678"
    assert labels_of["0"]["pci_bus_id"] == "00000000:41:00.0"
    assert "gputui_exporter_last_poll_timestamp_seconds{" in text and 'source="nvml"' in text
