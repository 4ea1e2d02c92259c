from __future__ import annotations

import re

from gputui.core.resources import scenarios_dir
from gputui.model.snapshot import DeviceInfo, DeviceSample, DeviceSnapshot, Snapshot
from gputui.render.snapshot_text import duration, render, size
from gputui.sources.simulated.source import SimulatedSource

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _render(name: str, t: float, **kw: object) -> str:
    src = SimulatedSource.from_scenario(scenarios_dir() / name, clock=lambda: t)
    return render(src.poll(), source_label=name, **kw)  # type: ignore[arg-type]


def _gpu_line(text: str, index: int) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"[{index}] "))


def test_demo_table_at_a_fixed_clock() -> None:
    text = _render("demo.toml", 60.0)
    lines = text.splitlines()
    header = lines[0]
    for part in ("ml-workstation", "driver 550.54.15", "CUDA 12.4", "SIMULATED (demo.toml)"):
        assert part in header
    assert lines[1].startswith("CPU ") and "of 32 cores" in lines[1]
    rtx, a100 = _gpu_line(text, 0), _gpu_line(text, 1)
    assert "NVIDIA GeForce RTX 3090" in rtx and "/24.0 GiB" in rtx and "/350 W" in rtx
    assert "NVIDIA A100-SXM4-80GB" in a100 and "/80.0 GiB" in a100 and "/400 W" in a100
    assert "fan  N/A" in a100  # the SXM module has no fan: N/A, never 0
    assert "fan  N/A" not in rtx
    # Processes alive at t=60 per demo.toml, indented under their GPU, in order.
    body = text[text.index(rtx) : text.index(a100)]
    for pid in ("1874", "51207", "88412"):
        assert re.search(rf"^\s+{pid}\s", body, re.M)
    tail = text[text.index(a100) :]
    for pid in ("60331", "72950", "73518"):
        assert re.search(rf"^\s+{pid}\s", tail, re.M)
    vllm = next(line for line in lines if " 88412 " in line)
    assert "root" in vllm and "[container 3f9a2c1b7d4e pid 1]" in vllm and "vllm" in vllm
    assert "bob" in next(line for line in lines if " 60331 " in line)
    assert " G " in next(line for line in lines if " 1874 " in line)  # Xorg is a graphics process
    assert not ANSI.search(text)


def test_finished_and_not_yet_started_processes_are_absent() -> None:
    early, mid, late = (_render("demo.toml", t) for t in (0.0, 60.0, 200.0))
    # demo.toml: pid 73518 runs from 45 s to 165 s, pid 72950 ends at 90 s.
    assert " 73518 " not in early and " 73518 " in mid and " 73518 " not in late
    assert " 72950 " in early and " 72950 " in mid and " 72950 " not in late


def test_lost_gpu_and_unsupported_fields() -> None:
    text = _render("faults.toml", 31.0)
    assert "FAILED: GPU is lost" in _gpu_line(text, 1)
    gtx = _gpu_line(text, 0)
    assert "N/A/250 W" in gtx  # power unsupported: N/A, not 0
    assert "(not visible from here" in text
    assert "note: gputui runs inside a container" in text


def test_colour_only_when_asked() -> None:
    coloured = _render("demo.toml", 60.0, color=True)
    assert ANSI.search(coloured)
    assert ANSI.sub("", coloured).replace(" SIMULATED (demo.toml) ", "*** SIMULATED (demo.toml) ***") == _render("demo.toml", 60.0)


def test_width_truncates_commands_only() -> None:
    text = _render("demo.toml", 60.0, width=100)
    for line in text.splitlines():
        if line.startswith("    "):
            assert len(line) <= 100, line
    assert "..." in text


def test_empty_and_nvml_snapshots() -> None:
    snap = Snapshot(timestamp=0.0, source="nvml", devices=(), driver_version=None)
    text = render(snap)
    assert "no GPUs found" in text and "source nvml" in text and "SIMULATED" not in text
    dev = DeviceSnapshot(info=DeviceInfo(index=0, name="X", memory_total=1 << 30), sample=DeviceSample())
    line = _gpu_line(render(Snapshot(0.0, "nvml", (dev,))), 0)
    assert " 0%" not in line and line.count("N/A") >= 4


def test_helpers() -> None:
    assert size(412 << 20) == "412MiB" and size(int(61.8 * (1 << 30))) == "61.8GiB" and size(None) == "N/A"
    assert duration(59) == "0:59" and duration(3600 + 61) == "1:01:01" and duration(90000) == "1d01h"
    assert duration(None) == "N/A"
