"""Hand-built sources for the dashboard tests: scripted, failing and blocking."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gputui.model.snapshot import (
    DeviceInfo,
    DeviceSample,
    DeviceSnapshot,
    GpuProcess,
    HostSnapshot,
    Snapshot,
)
from gputui.tui.app import GpuTuiApp

GIB = 1024**3

# Tests share helpers in demo_driving.py, imported by name (--import-mode=importlib adds no paths).
sys.path.insert(0, str(Path(__file__).parent))


def make_app(source: Any, **kw: Any) -> GpuTuiApp:
    """The dashboard on `source`, with a fixed clock and hostname and no catalog lookup."""
    kw.setdefault("interval", 0.05)
    kw.setdefault("clock", lambda: "01:02:03")
    kw.setdefault("hostname", "testhost")
    kw.setdefault("card_lookup", None)
    return GpuTuiApp(source, **kw)


def make_device(
    index: int, *, util: int | None = 50, used_gib: float | None = 4.0, **sample: Any
) -> DeviceSnapshot:
    info = DeviceInfo(
        index=index,
        name="NVIDIA GeForce RTX 3090" if index % 2 == 0 else "NVIDIA A100-SXM4-80GB",
        uuid=f"GPU-{index:04d}",
        memory_total=24 * GIB if index % 2 == 0 else 80 * GIB,
        compute_capability="8.6" if index % 2 == 0 else "8.0",
        architecture="ampere",
        power_limit_w=350.0,
    )
    fields: dict[str, Any] = dict(
        utilization_gpu=util,
        utilization_memory=20,
        memory_used=None if used_gib is None else int(used_gib * GIB),
        memory_total=info.memory_total,
        temperature_c=61,
        fan_pct=40,
        power_w=210.0,
        power_limit_w=350.0,
        sm_clock_mhz=1800,
        mem_clock_mhz=9751,
        performance_state=2,
        pcie_rx_kbs=2048,
        pcie_tx_kbs=512,
        throttle_reasons=(),
        ecc_volatile_uncorrected=0,
    )
    fields.update(sample)
    return DeviceSnapshot(info=info, sample=DeviceSample(**fields))


def make_process(gpu: int, pid: int, **kw: Any) -> GpuProcess:
    base: dict[str, Any] = dict(
        type="compute",
        gpu_memory=1 * GIB,
        sm_util=10,
        mem_util=5,
        user="alice",
        name="python",
        cmdline=("python", "train.py", f"--rank={pid}"),
        cpu_percent=12.5,
        rss=512 * 1024**2,
        running_s=125.0,
    )
    base.update(kw)
    return GpuProcess(gpu_index=gpu, pid=pid, **base)


def make_snapshot(
    n_gpus: int = 2, processes: tuple[GpuProcess, ...] | None = None, **kw: Any
) -> Snapshot:
    if processes is None:
        processes = (
            make_process(0, 1001, gpu_memory=8 * GIB, user="alice"),
            make_process(
                0, 1002, gpu_memory=2 * GIB, user="bob", type="graphics", name="Xorg", cmdline=None
            ),
            make_process(
                n_gpus - 1, 1003, gpu_memory=5 * GIB, user="carol", container="3f2a9c1d7e0b"
            ),
        )
    base: dict[str, Any] = dict(
        timestamp=1_700_000_000.0,
        source="simulated",
        devices=tuple(make_device(i) for i in range(n_gpus)),
        processes=processes,
        host=HostSnapshot(
            hostname="testhost",
            cpu_percent=23.0,
            per_cpu_percent=(10.0, 20.0, 30.0, 40.0),
            load_average=(1.5, 1.0, 0.5),
            memory_total=64 * GIB,
            memory_used=16 * GIB,
            memory_available=48 * GIB,
            swap_total=2 * GIB,
            swap_used=0,
        ),
        driver_version="550.54.15",
        cuda_driver_version="12.4",
        nvml_version="12.550.54.15",
    )
    base.update(kw)
    return Snapshot(**base)


class ScriptedSource:
    """Returns `next_snapshot` on every poll; tests swap it, or set `error` / `gate`."""

    name = "simulated"

    def __init__(self, snapshot: Snapshot) -> None:
        self.next_snapshot = snapshot
        self.error: Exception | None = None
        self.gate: threading.Event | None = None
        self.polls = 0
        self.entered = threading.Event()
        self.closed = False

    def poll(self) -> Snapshot:
        self.polls += 1
        self.entered.set()
        if self.gate is not None:
            self.gate.wait(timeout=30)
        if self.error is not None:
            raise self.error
        return self.next_snapshot

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def snapshot_factory() -> Callable[..., Snapshot]:
    return make_snapshot


@pytest.fixture
def process_factory() -> Callable[..., GpuProcess]:
    return make_process


@pytest.fixture
def device_factory() -> Callable[..., DeviceSnapshot]:
    return make_device


@pytest.fixture
def scripted_source() -> ScriptedSource:
    return ScriptedSource(make_snapshot())


__all__ = ["ScriptedSource", "make_snapshot", "make_process", "make_device", "replace"]
