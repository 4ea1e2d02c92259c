"""A GPU whose process list NVML cannot give says so, instead of "no running processes"."""

from __future__ import annotations

from typing import Any

import pynvml

from gputui.render.snapshot_text import render
from gputui.sources.nvml.source import NvmlSource


def test_not_supported_process_list_is_reported_as_unavailable(fake_nvml: Any) -> None:
    gpu = fake_nvml.gpus[1]
    gpu.compute = []
    gpu.errors["nvmlDeviceGetComputeRunningProcesses_v3"] = pynvml.NVML_ERROR_NOT_SUPPORTED
    source = NvmlSource.open(with_host=False)
    try:
        snap = source.poll()
    finally:
        source.close()
    d0, d1 = snap.devices
    assert d1.processes_unsupported and not d0.processes_unsupported
    assert not [p for p in snap.processes if p.gpu_index == 1]
    text = render(snap)
    gpu1 = text.split("[1]")[1]
    assert "process list not available on this GPU" in gpu1
    assert "no running processes" not in gpu1
