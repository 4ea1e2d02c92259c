"""scripts/gpu_check.py: gputui's JSON against nvidia-smi's CSV (the real-GPU check, tested offline)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

MiB = 1024 * 1024
SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "gpu_check.py"


def _module():
    spec = importlib.util.spec_from_file_location("gpu_check_script", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _snapshot(**sample_changes):
    sample = {
        "utilization_gpu": 40,
        "memory_used": 1000 * MiB,
        "temperature_c": 50,
        "power_w": 100.0,
        "sm_clock_mhz": 1400,
        "mem_clock_mhz": 9501,
    }
    sample.update(sample_changes)
    return {
        "devices": [
            {
                "info": {
                    "name": "NVIDIA H200",
                    "uuid": "GPU-1",
                    "pci_bus_id": "00000000:19:00.0",
                    "memory_total": 143771 * MiB,
                },
                "sample": sample,
                "failed": None,
            }
        ],
        "processes": [
            {"pid": 77, "type": "compute", "gpu_memory": 900 * MiB},
            {"pid": 78, "type": "graphics", "gpu_memory": 10 * MiB},
        ],
    }


GPU_CSV = "NVIDIA H200, GPU-1, 00000000:19:00.0, 143771, 1010, 35, 51, 104.50, 1410, 9501\n"
APPS_CSV = "77, 900\n"


def test_agreeing_readings_pass():
    rep = _module().compare(_snapshot(), GPU_CSV, APPS_CSV)
    assert rep.bad == 0, "\n".join(rep.lines)
    assert rep.compared >= 12


def test_differences_are_reported():
    snap = _snapshot(temperature_c=70, power_w=None)
    snap["devices"][0]["info"]["name"] = "NVIDIA H100"
    snap["processes"][0]["pid"] = 79
    rep = _module().compare(snap, GPU_CSV, APPS_CSV)
    diffs = [line for line in rep.lines if line.startswith("DIFF")]
    assert any("name" in d for d in diffs)
    assert any("temperature" in d for d in diffs)
    assert any("power.draw" in d and "one side N/A" in d for d in diffs)
    assert any("compute PIDs" in d for d in diffs)
    assert rep.bad == len(diffs) == 5  # the PID's memory cannot be matched either


def test_not_supported_on_both_sides_is_fine():
    csv = "NVIDIA H200, GPU-1, 00000000:19:00.0, 143771, 1010, 35, 51, [N/A], 1410, 9501\n"
    rep = _module().compare(_snapshot(power_w=None), csv, "")
    assert rep.bad == 1  # only the process list differs (nvidia-smi lists none)
